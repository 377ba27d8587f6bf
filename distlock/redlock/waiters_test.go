package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/redlock"
	"github.com/seatlock/seatlock/internal/testenv"
)

// A node publishes a release only when somebody failed to take the key
// there while it was held (acquire.lua marks it, release.lua publishes for
// a marked key only). TestReleaseWakesWaiter holds the wake-up to it; these
// tests hold the rest: no PUBLISH when nobody waited, and a marked lock
// still its holder's, to refresh, raise and release.

func TestReleasePublishesOnlyWhenWaitedFor(t *testing.T) {
	servers := startServers(t, 3)
	holder := newLocker(t, servers, testOptions())
	other := newLocker(t, servers, testOptions())
	key := "{publish}:" + uuid.NewString()
	channel := holder.LockKeyForTest(key) // a release is published on the lock key's name

	// Node 0 stands for every node: each runs the same scripts.
	admin := servers[0].client(t)
	ps := admin.Subscribe(t.Context(), channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	// publishMarker publishes a payload of the test's own after a release:
	// the node delivers one connection's messages in the order it published
	// them, so whatever the release published arrives before it.
	publishMarker := func(payload string) {
		t.Helper()
		if err := admin.Publish(t.Context(), channel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}

	lock, err := holder.TryObtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	publishMarker("after the uncontended release")
	if got := testenv.NextMessage(t, ps); got != "after the uncontended release" {
		t.Errorf("a release nobody waited for published %q", got)
		testenv.NextMessage(t, ps)
	}

	lock, err = holder.TryObtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryObtain(t.Context(), key); err == nil {
		t.Fatal("TryObtain of a held key succeeded")
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatalf("Release after another locker failed to take the key: %v", err)
	}
	publishMarker("after the waited-for release")
	if got := testenv.NextMessage(t, ps); got == "after the waited-for release" {
		t.Errorf("a release after a failed attempt on the key published nothing")
	}
}

// TestMarkedLockStaysHeld checks that keys marked by a waiter are still
// their holder's: refreshed, and released with nil (every node still held
// them), after which the waiter gets them.
func TestMarkedLockStaysHeld(t *testing.T) {
	servers := startServers(t, 3)
	holder := newLocker(t, servers, testOptions())
	other := newLocker(t, servers, testOptions())
	keys := []string{"{marked}:A-" + uuid.NewString(), "{marked}:B-" + uuid.NewString()}

	lock, err := holder.TryObtain(t.Context(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := other.TryObtain(t.Context(), k); err == nil {
			t.Fatalf("TryObtain of held %s succeeded", k)
		}
	}
	if err := lock.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh of a lock others wait for: %v", err)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatalf("Release of a lock others wait for: %v", err)
	}
	again, err := other.TryObtain(t.Context(), keys...)
	if err != nil {
		t.Fatalf("the keys after the release: %v", err)
	}
	_ = again.Release(t.Context())
}

// markAfterAcquire returns a go-redis hook that marks lockKey through
// marker, another client on the same node, as a waiter refused there
// would, right after each acquire script that granted it: between the
// grant and the raise round.
func markAfterAcquire(marker *redis.Client, lockKey string) testenv.AfterCommand {
	return func(ctx context.Context, cmd redis.Cmder, err error) error {
		// EVALSHA sha 2 lockKey fenceKey token ...
		if args := cmd.Args(); err == nil && len(args) > 5 && args[1] == redlock.AcquireScriptHashForTest() && args[3] == lockKey {
			token := args[5].(string)
			return marker.SetRange(ctx, lockKey, int64(len(token)), "+").Err()
		}
		return err
	}
}

// TestRaiseOnMarkedLock checks that the raise round counts a node whose
// key a waiter marked after the grant as one that holds the lock: node 0's
// counter is ahead of the others', so the granting nodes disagree and the
// lock must be raised on a quorum, and every node's key is marked before
// the raise reaches it.
func TestRaiseOnMarkedLock(t *testing.T) {
	servers := startServers(t, 3)
	key := "{raise}:" + uuid.NewString()
	probe := newLocker(t, servers, testOptions())
	lockKey := probe.LockKeyForTest(key)
	// The first Obtain loads the scripts, so that the hooks see EVALSHA.
	warm, err := probe.Obtain(t.Context(), "{raise}:warm-"+uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	cs := make([]redlock.Client, len(servers))
	for i, s := range servers {
		c := s.client(t)
		c.AddHook(markAfterAcquire(s.client(t), lockKey))
		cs[i] = c
	}
	locker := redlock.New(cs, testOptions())
	t.Cleanup(func() { _ = locker.Close() })
	ahead := time.Now().Add(24 * time.Hour).UnixMicro()
	if err := servers[0].client(t).Set(t.Context(), locker.FenceKeyForTest(key), ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}
	lock, err := locker.TryObtain(t.Context(), key)
	if err != nil {
		t.Fatalf("TryObtain with every node's key marked before the raise: %v", err)
	}
	if got := lock.Token(key); got != ahead+1 {
		t.Errorf("token = %d, want %d (node 0's counter plus one)", got, ahead+1)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatalf("Release of the marked lock: %v", err)
	}
}
