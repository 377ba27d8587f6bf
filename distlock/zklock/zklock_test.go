package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/zklock"
	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/wait"
)

func TestConformance(t *testing.T) {
	// Every subtest gets one root, shared by all the lockers it makes.
	var mu sync.Mutex
	roots := map[string]string{}
	rootOf := func(t *testing.T) string {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := roots[t.Name()]; ok {
			return r
		}
		r := testRoot(t)
		roots[t.Name()] = r
		return r
	}
	distlocktest.Run(t, func(t *testing.T) distlock.Locker {
		return dial(t, rootOf(t))
	}, distlocktest.Options{
		// There is no lease: a node lives as long as its session. The
		// session timeout plays the TTL: a vanished holder's keys are free
		// once its session expired.
		TTL:     sessionTimeout,
		Fencing: true,
		// A holder that crashed right after Obtain: its connection is cut
		// and stays cut, so the session expires on the server.
		NewNonRenewing: func(t *testing.T) distlock.Locker {
			var c cutter
			return crashAfterObtain{dial(t, rootOf(t), c.option()), &c}
		},
		// Expire deletes the holder's node, the first of the key's queue.
		Expire: func(t *testing.T, key string) {
			dir := dial(t, rootOf(t)).DirForTest(key)
			conn := connect(t)
			children, _, err := conn.Children(dir)
			if err != nil || len(children) == 0 {
				t.Fatalf("children of %s = %v, %v", dir, children, err)
			}
			slices.SortFunc(children, bySequence)
			if err := conn.Delete(dir+"/"+children[0], -1); err != nil {
				t.Fatalf("delete the holder's node: %v", err)
			}
		},
	})
}

// crashAfterObtain is a Locker whose process dies right after it took its
// keys: its connection to ZooKeeper is cut without a goodbye.
type crashAfterObtain struct {
	*zklock.Locker
	c *cutter
}

func (l crashAfterObtain) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	lock, err := l.Locker.Obtain(ctx, keys...)
	if err == nil {
		l.c.Cut()
	}
	return lock, err
}

// bySequence orders lock nodes by the sequence number at the end of their
// name, as the queue does.
func bySequence(a, b string) int {
	return strings.Compare(a[len(a)-10:], b[len(b)-10:])
}

// waitChildren waits until dir has n children.
func waitChildren(t *testing.T, conn *zk.Conn, dir string, n int) {
	t.Helper()
	wait.For(t, patience, fmt.Sprintf("%s has %d children", dir, n), func() bool {
		children, _, err := conn.Children(dir)
		return err == nil && len(children) == n
	})
}

// Waiters get the key in the order they arrived: the queue is the order of
// the sequence numbers, and each waiter only waits for its predecessor.
func TestFairOrder(t *testing.T) {
	t.Parallel()
	const waiters = 6
	root := testRoot(t)
	key := "{screening-1}:C7"
	holderLocker := dial(t, root)
	dir := holderLocker.DirForTest(key)
	holder, err := holderLocker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	// Three lockers, as three service instances: the order is across them.
	ls := []*zklock.Locker{dial(t, root), dial(t, root), dial(t, root)}
	conn := connect(t)

	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for i := range waiters {
		wg.Go(func() {
			lock, err := ls[(waiters-i)%len(ls)].Obtain(ctx, key)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond) // a holder that holds a moment: the next waits for it
			if err := lock.Release(ctx); err != nil {
				t.Errorf("waiter %d: Release: %v", i, err)
			}
		})
		waitChildren(t, conn, dir, i+2) // waiter i is queued before i+1 arrives
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("waiters acquired in order %v, want %v (arrival order)", order, want)
	}
}

// A holder cut off from ZooKeeper is told of the loss before its session
// expires on the server, and so before a waiter can take the key.
func TestSessionExpiryHandsOver(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	key := "{screening-2}:A1"
	var c cutter
	holder, err := dial(t, root, c.option()).Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	waiter := dial(t, root)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		lock, err := waiter.Obtain(ctx, key)
		at := time.Now()
		if err == nil {
			_ = lock.Release(ctx)
		}
		got <- result{at, err}
	}()
	waitChildren(t, connect(t), waiter.DirForTest(key), 2)

	cutAt := time.Now()
	c.Cut()
	var lostAt time.Time
	select {
	case <-holder.Lost():
		lostAt = time.Now()
	case <-time.After(patience):
		t.Fatal("the cut-off holder was not told of the loss")
	}
	if err := holder.Err(); !errors.Is(err, distlock.ErrLost) {
		t.Fatalf("holder's Err = %v, want ErrLost", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	t.Logf("cut at 0, holder told at %v, waiter acquired at %v", lostAt.Sub(cutAt), r.at.Sub(cutAt))
	if !lostAt.Before(r.at) {
		t.Fatal("the waiter acquired before the old holder was told of the loss")
	}
	// The server counts the session timeout from the last it heard of the
	// holder: a ping, which the client sends every third of the timeout, so
	// up to a third before the cut.
	if d := r.at.Sub(cutAt); d < sessionTimeout*2/3 {
		t.Fatalf("the waiter acquired %v after the cut, before the session could expire", d)
	}
	if err := holder.Release(t.Context()); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after loss = %v, want ErrNotHeld", err)
	}
}

// A Locker from New sees no session events: while cut off it cannot tell,
// but once it reaches the server again and finds its session expired, its
// watches end and the loss is reported.
func TestNewLearnsExpiryOnReconnect(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	key := "{screening-3}:B2"
	var c cutter
	conn, _, err := zk.Connect([]string{zktest.Addr(t, server, serverErr)}, sessionTimeout, zk.WithLogger(quiet{}), zk.WithDialer(c.dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	locker := zklock.New(conn, zklock.Options{Root: root})
	t.Cleanup(func() { _ = locker.Close() })
	holder, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	c.Cut()

	// Another client takes the key once the server expired the session.
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	other, err := dial(t, root).Obtain(ctx, key)
	if err != nil {
		t.Fatalf("the key was not freed by the session's expiry: %v", err)
	}
	defer other.Release(context.Background())
	select {
	case <-holder.Lost():
		t.Fatal("Lost closed while no server could be reached: what told it?")
	default:
	}

	c.Heal()
	select {
	case <-holder.Lost():
	case <-time.After(patience):
		t.Fatal("the loss was not reported after reconnecting")
	}
	if err := holder.Err(); !errors.Is(err, distlock.ErrLost) || !errors.Is(err, zk.ErrSessionExpired) {
		t.Fatalf("holder's Err = %v, want ErrLost and zk.ErrSessionExpired", err)
	}
}

// A lock released while no server can be reached costs one failed call,
// not one per key: every call waits for the client to give up a round of
// its servers (a second), and a booking of ten seats, lost in a cut,
// answered seconds late (faults' TestHolderCutOff). The rounds the client
// dialled during the Release tell the calls apart where time would not on
// a busy machine: one call ends with the first round, six need six. Once
// the server is reached again, no node of the lock is left.
func TestReleaseWhileCutOff(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	keys := []string{"{screening-4}:A1", "{screening-4}:A2", "{screening-4}:A3", "{screening-4}:A4", "{screening-4}:A5", "{screening-4}:A6"}
	var c cutter
	locker := dial(t, root, c.option())
	holder, err := locker.Obtain(t.Context(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	c.Cut()
	select {
	case <-holder.Lost():
	case <-time.After(patience):
		t.Fatal("the cut-off holder was not told of the loss")
	}
	start, dialled := time.Now(), c.Dials()
	err = holder.Release(t.Context())
	took, rounds := time.Since(start), c.Dials()-dialled
	if !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after loss = %v, want ErrNotHeld", err)
	}
	t.Logf("Release of %d keys took %v and %d rounds of dialling while cut off", len(keys), took, rounds)
	// One round ends the one call; one more may pass while the Release,
	// its call failed, waits to be scheduled on a busy machine.
	if rounds > 2 {
		t.Fatalf("Release of %d keys waited out %d rounds of dialling while cut off: one call per key", len(keys), rounds)
	}

	c.Heal()
	conn := connect(t)
	for _, key := range keys {
		dir := locker.DirForTest(key)
		wait.For(t, patience, dir+" is empty after the heal", func() bool {
			children, _, err := conn.Children(dir)
			return errors.Is(err, zk.ErrNoNode) || err == nil && len(children) == 0
		})
	}
}

// The last node of a key to go takes the key's directory along, so the
// tree does not grow with every key ever locked, while a queued waiter's
// node keeps the directory until that waiter releases in turn. An Obtain
// of the key creates the directory again.
func TestReleaseDeletesEmptyDir(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	key := "{screening-6}:C3"
	holderLocker, waiterLocker := dial(t, root), dial(t, root)
	dir := holderLocker.DirForTest(key)
	conn := connect(t)
	dirExists := func() bool {
		t.Helper()
		ok, _, err := conn.Exists(dir)
		if err != nil {
			t.Fatalf("Exists %s: %v", dir, err)
		}
		return ok
	}
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()

	for round := 1; round <= 2; round++ {
		holder, err := holderLocker.Obtain(ctx, key)
		if err != nil {
			t.Fatalf("round %d: Obtain: %v", round, err)
		}
		type result struct {
			lock distlock.Lock
			err  error
		}
		got := make(chan result, 1)
		go func() {
			lock, err := waiterLocker.Obtain(ctx, key)
			got <- result{lock, err}
		}()
		waitChildren(t, conn, dir, 2)
		if err := holder.Release(ctx); err != nil {
			t.Fatalf("round %d: holder's Release: %v", round, err)
		}
		r := wait.Recv(t, got, patience, "the waiter's Obtain")
		if r.err != nil {
			t.Fatalf("round %d: waiter's Obtain: %v", round, r.err)
		}
		if !dirExists() {
			t.Fatalf("round %d: %s was deleted while the waiter's node was in it", round, dir)
		}
		if err := r.lock.Release(ctx); err != nil {
			t.Fatalf("round %d: waiter's Release: %v", round, err)
		}
		if dirExists() {
			t.Fatalf("round %d: %s is left behind after the last Release of %q", round, dir, key)
		}
	}
}

// A connection that breaks and comes back to its session while the
// Locker holds a lock, other watches are set, and calls are in flight: on
// the new connection the client sets every watch again while the answers
// to those calls arrive. The race detector watches that moment:
// go-zookeeper/zk v1.0.4 has a data race there (see "The client library"
// in doc.go), which the many watches make likely to show. The Locker must
// work on after each reconnection.
func TestCallsAcrossReconnection(t *testing.T) {
	t.Parallel()
	root := testRoot(t)
	var c cutter
	conn, events, err := zk.Connect([]string{zktest.Addr(t, server, serverErr)}, sessionTimeout, zk.WithLogger(quiet{}), zk.WithDialer(c.dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	locker := zklock.New(conn, zklock.Options{Root: root})
	t.Cleanup(func() { _ = locker.Close() })
	held, err := locker.Obtain(t.Context(), "{screening-5}:A1")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())
	// Watches on nodes that do not exist (yet) cost the server nothing, but
	// the client sets each again on every reconnection, which takes it long
	// enough for the answers to the calls below to come first.
	const watches = 2000
	var wg sync.WaitGroup
	errs := make(chan error, watches)
	for i := range watches {
		wg.Go(func() {
			_, _, _, err := conn.ExistsW(fmt.Sprintf("%s/watched/%d", root, i))
			errs <- err
		})
	}
	wg.Wait()
	for range watches {
		if err := <-errs; err != nil {
			t.Fatalf("ExistsW: %v", err)
		}
	}

	// Calls in flight: clients that take and release keys of their own,
	// again and again.
	var (
		answered atomic.Int64 // take-and-release cycles that succeeded
		stop     = make(chan struct{})
	)
	for client := range 4 {
		wg.Go(func() {
			key := fmt.Sprintf("{screening-5}:B%d", client+1)
			for {
				select {
				case <-stop:
					return
				default:
				}
				lock, err := locker.TryObtain(t.Context(), key)
				if err == nil && lock.Release(t.Context()) == nil {
					answered.Add(1)
				}
			}
		})
	}
	defer wg.Wait()
	defer close(stop)

	for round := 1; round <= 3; round++ {
		dialled := c.Dials()
		c.Drop()
		wait.For(t, patience, fmt.Sprintf("round %d: the client dials again after the drop", round), func() bool {
			return c.Dials() > dialled
		})
		before := answered.Load()
		wait.For(t, patience, fmt.Sprintf("round %d: a key is taken and released after the reconnection", round), func() bool {
			return answered.Load() > before
		})
	}
}

func TestObtainErrors(t *testing.T) {
	t.Parallel()
	l := dial(t, testRoot(t))
	if _, err := l.Obtain(t.Context()); err == nil {
		t.Fatal("Obtain without keys succeeded")
	}
	if _, err := l.Obtain(t.Context(), ""); err == nil {
		t.Fatal("Obtain of an empty key succeeded")
	}
	// Keys that are not plain znode names still work.
	lock, err := l.Obtain(t.Context(), "a/b", "..", "{s}:C7")
	if err != nil {
		t.Fatalf("Obtain of odd keys: %v", err)
	}
	if _, err := l.TryObtain(t.Context(), ".."); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain of a held key = %v, want ErrNotAcquired", err)
	}
	if err := lock.Refresh(t.Context()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := lock.Refresh(t.Context()); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Refresh after Release = %v, want ErrNotHeld", err)
	}
}
