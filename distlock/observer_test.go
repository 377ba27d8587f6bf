package distlock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/internal/wait"
)

// renewals is a RenewalObserver that records what it is told.
type renewals struct {
	mu     sync.Mutex // protects the fields below: the watchdog calls from several goroutines
	ok     int
	failed []error
	lost   int
}

func (r *renewals) Renewed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		r.ok++
		return
	}
	r.failed = append(r.failed, err)
}

func (r *renewals) Lost() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost++
}

func (r *renewals) counts() (ok, failed, lost int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, len(r.failed), r.lost
}

func TestRedisObserverSeesRenewals(t *testing.T) {
	// A lease of forty renewal periods: a busy machine's late renewals
	// still keep the lock.
	const ttl, every = 2 * time.Second, 50 * time.Millisecond
	obs := &renewals{}
	r := newRedis(t, newClient(t), distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: testPrefix(t), Observer: obs})
	lock, err := r.Obtain(t.Context(), "{s}:A1")
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "3 renewals observed", func() bool { ok, _, _ := obs.counts(); return ok >= 3 })
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, failed, lost := obs.counts(); failed != 0 || lost != 0 {
		t.Fatalf("observed %d failed renewals (%v) and %d losses of a lock held normally", failed, obs.failed, lost)
	}
}

func TestRedisObserverSeesFailedRenewals(t *testing.T) {
	const ttl, every = time.Second, 50 * time.Millisecond
	c := newClient(t)
	hook := &failingRefresh{}
	c.AddHook(hook)
	obs := &renewals{}
	r := newRedis(t, c, distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: testPrefix(t), Observer: obs})
	obtainHeld(t, r, "{s}:A2")

	hook.on.Store(true)
	wait.For(t, 10*time.Second, "a failed renewal observed while every renewal fails", func() bool {
		_, failed, _ := obs.counts()
		return failed > 0
	})
	hook.on.Store(false)
	obs.mu.Lock()
	first := obs.failed[0]
	obs.mu.Unlock()
	if !errors.Is(first, errInjected) {
		t.Fatalf("Renewed(%v), want the renewal's error", first)
	}
}

func TestRedisObserverSeesLostKey(t *testing.T) {
	const ttl, every = 600 * time.Millisecond, 50 * time.Millisecond
	c := newClient(t)
	obs := &renewals{}
	r := newRedis(t, c, distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: testPrefix(t), Observer: obs})
	lock := obtainHeld(t, r, "{s}:A3")

	// Someone deletes the key (an operator, a failover that lost it): the
	// next renewal finds it gone.
	if err := c.Del(t.Context(), r.LockKeyForTest("{s}:A3")).Err(); err != nil {
		t.Fatal(err)
	}
	wait.Recv(t, lock.Lost(), 10*time.Second, "the lock is lost once its key was deleted")
	// Lost is reported once, and no more renewals of the lost lock are.
	// The report comes right after Lost is closed, from the same goroutine.
	wait.For(t, 10*time.Second, "the loss reported to the observer", func() bool { _, _, lost := obs.counts(); return lost > 0 })
	okBefore, _, _ := obs.counts()
	time.Sleep(4 * every) // the time under test: renewals would be due in it
	ok, failed, lost := obs.counts()
	if lost != 1 {
		t.Fatalf("Lost observed %d times, want 1", lost)
	}
	if ok != okBefore || failed != 0 {
		t.Fatalf("after the loss: %d more renewals, %d failed: the lost lock is still renewed", ok-okBefore, failed)
	}
}

func TestRedisObserverSeesExpiry(t *testing.T) {
	// No renewals: the lease runs out while held, which the watchdog
	// declares at its deadline.
	const ttl = 200 * time.Millisecond
	obs := &renewals{}
	r := newRedis(t, newClient(t), distlock.RedisOptions{TTL: ttl, RenewEvery: -1, Prefix: testPrefix(t), Observer: obs})
	lock := obtainHeld(t, r, "{s}:A4")
	wait.Recv(t, lock.Lost(), 10*time.Second, "the lock is lost once its lease ran out without renewals")
	wait.For(t, 10*time.Second, "the loss reported to the observer", func() bool { _, _, lost := obs.counts(); return lost > 0 })
	if ok, failed, lost := obs.counts(); lost != 1 || ok != 0 || failed != 0 {
		t.Fatalf("observed %d renewals, %d failed, %d losses; want just 1 loss", ok, failed, lost)
	}
}
