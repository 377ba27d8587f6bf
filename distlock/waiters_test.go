package distlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// A release is published only when somebody failed to take the key while
// it was held (acquire.lua marks it, release.lua publishes for a marked key
// only). These tests hold both halves to it: no PUBLISH when nobody waited,
// a PUBLISH when somebody did, and no waiter left asleep when the release
// comes between its failed attempt and its subscription.

// pollForever is a backoff no test waits out: a waiter that gets its key
// within a test was woken by a release, not by its polling.
const pollForever = time.Minute

func TestRedisReleasePublishesOnlyWhenWaitedFor(t *testing.T) {
	prefix := testPrefix(t)
	ctx := t.Context()
	holder := newRedis(t, newClient(t), distlock.RedisOptions{Prefix: prefix})
	other := newRedis(t, newClient(t), distlock.RedisOptions{Prefix: prefix})
	const key = "{screening-1}:C7"
	channel := holder.ChannelForTest(key)

	admin := newClient(t)
	ps := admin.Subscribe(ctx, channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	// publishMarker publishes a payload of the test's own after a release: the
	// server delivers one connection's messages in the order it published
	// them, so whatever the release published arrives before it.
	publishMarker := func(payload string) {
		t.Helper()
		if err := admin.Publish(ctx, channel, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}

	lock, err := holder.TryObtain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	publishMarker("after the uncontended release")
	if got := testenv.NextMessage(t, ps); got != "after the uncontended release" {
		t.Errorf("a release nobody waited for published %q", got)
		testenv.NextMessage(t, ps)
	}

	lock, err = holder.TryObtain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryObtain(ctx, key); err == nil {
		t.Fatal("TryObtain of a held key succeeded")
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release after another locker failed to take the key: %v", err)
	}
	publishMarker("after the waited-for release")
	if got := testenv.NextMessage(t, ps); got == "after the waited-for release" {
		t.Errorf("a release after a failed attempt on the key published nothing")
	}
}

// A key marked by a waiter is still its holder's: the holder renews and
// releases it as it would an unmarked key.
func TestRedisMarkedLockStaysHeld(t *testing.T) {
	const ttl, every = time.Second, 200 * time.Millisecond
	prefix := testPrefix(t)
	ctx := t.Context()
	holder := newRedis(t, newClient(t), distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: prefix})
	other := newRedis(t, newClient(t), distlock.RedisOptions{Prefix: prefix})
	keys := []string{"{s}:A1", "{s}:A2"}

	lock, err := holder.TryObtain(ctx, keys...)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, err := other.TryObtain(ctx, k); err == nil {
			t.Fatalf("TryObtain of held %s succeeded", k)
		}
	}
	if err := lock.Refresh(ctx); err != nil {
		t.Fatalf("Refresh of a lock others wait for: %v", err)
	}
	time.Sleep(ttl + every) // the watchdog renews it meanwhile
	if err := lock.Err(); err != nil {
		t.Fatalf("a lock others wait for was lost: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release of a lock others wait for: %v", err)
	}
	again, err := other.TryObtain(ctx, keys...)
	if err != nil {
		t.Fatalf("the keys after the release: %v", err)
	}
	_ = again.Release(ctx)
}

// afterFirstAcquire is a go-redis hook that runs do once, right after the
// first acquire script of its client has been answered: between a
// waiter's failed attempt, which marked the key, and its subscription.
type afterFirstAcquire struct {
	once     sync.Once
	do       func()
	attempts atomic.Int32 // acquire scripts answered
}

func (h *afterFirstAcquire) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *afterFirstAcquire) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *afterFirstAcquire) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 1 && args[1] == distlock.AcquireScriptHashForTest() {
			h.attempts.Add(1)
			h.once.Do(h.do)
		}
		return err
	}
}

// TestRedisWakeUpSurvivesReleaseBeforeSubscribe releases the key in the
// window where a waiter has failed once and marked the key, but is not
// subscribed yet: the release is published to nobody. The waiter must
// still get the key without polling, and, if someone else took it
// meanwhile, be woken by that holder's release in turn.
func TestRedisWakeUpSurvivesReleaseBeforeSubscribe(t *testing.T) {
	for _, retaken := range []bool{false, true} {
		name := "released"
		if retaken {
			name = "released and taken by another"
		}
		t.Run(name, func(t *testing.T) {
			prefix := testPrefix(t)
			ctx := t.Context()
			holder := newRedis(t, newClient(t), distlock.RedisOptions{TTL: time.Minute, Prefix: prefix})
			next := newRedis(t, newClient(t), distlock.RedisOptions{TTL: time.Minute, Prefix: prefix})
			const key = "{screening-1}:C9"
			held, err := holder.TryObtain(ctx, key)
			if err != nil {
				t.Fatal(err)
			}

			var second distlock.Lock // set by the hook, read after attempts says so
			hook := &afterFirstAcquire{}
			hook.do = func() {
				if err := held.Release(context.Background()); err != nil {
					t.Errorf("holder's Release: %v", err)
				}
				if retaken {
					l, err := next.TryObtain(context.Background(), key)
					if err != nil {
						t.Errorf("another locker's TryObtain after the release: %v", err)
					}
					second = l
				}
			}
			waiterClient := newClient(t)
			waiterClient.AddHook(hook)
			waiter := newRedis(t, waiterClient, distlock.RedisOptions{Prefix: prefix, MinBackoff: pollForever, MaxBackoff: pollForever})

			got := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(ctx, pollForever/4)
				defer cancel()
				lock, err := waiter.Obtain(ctx, key)
				if err == nil {
					err = lock.Release(context.Background())
				}
				got <- err
			}()
			if retaken {
				// The waiter looks again once subscribed, fails, and marks
				// the new holder's key; only that holder's release can
				// wake it now.
				wait.For(t, 10*time.Second, "the waiter's second attempt", func() bool { return hook.attempts.Load() >= 2 })
				select {
				case err := <-got:
					t.Fatalf("the waiter returned while the key was held: %v", err)
				case <-time.After(50 * time.Millisecond):
				}
				if second == nil {
					t.FailNow()
				}
				if err := second.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-got; err != nil {
				t.Fatalf("the waiter: %v (its wake-up was lost: it would have polled after %v)", err, pollForever)
			}
		})
	}
}
