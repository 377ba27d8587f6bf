package distlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
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
	const ttl, every = 600 * time.Millisecond, 50 * time.Millisecond
	obs := &renewals{}
	r := newRedis(t, newClient(t), distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: testPrefix(t), Observer: obs})
	lock, err := r.Obtain(t.Context(), "{s}:A1")
	if err != nil {
		t.Fatal(err)
	}
	// Several renewal periods: whatever the machine's load, some ran.
	deadline := time.Now().Add(10 * ttl)
	for ok, _, _ := obs.counts(); ok < 3; ok, _, _ = obs.counts() {
		if time.Now().After(deadline) {
			t.Fatalf("%d renewals observed in %v with RenewEvery %v, want at least 3", ok, 10*ttl, every)
		}
		time.Sleep(every)
	}
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
	lock, err := r.Obtain(t.Context(), "{s}:A2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })

	hook.on.Store(true)
	deadline := time.Now().Add(5 * ttl)
	for _, failed, _ := obs.counts(); failed == 0; _, failed, _ = obs.counts() {
		if time.Now().After(deadline) {
			t.Fatal("no failed renewal observed while every renewal failed")
		}
		time.Sleep(every)
	}
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
	lock, err := r.Obtain(t.Context(), "{s}:A3")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })

	// Someone deletes the key (an operator, a failover that lost it): the
	// next renewal finds it gone.
	if err := c.Del(t.Context(), r.LockKeyForTest("{s}:A3")).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lock.Lost():
	case <-time.After(5 * ttl):
		t.Fatal("not lost 5 TTLs after its key was deleted")
	}
	// Lost is reported once, and no more renewals of the lost lock are.
	// The report comes right after Lost is closed, from the same goroutine:
	// wait for it briefly.
	deadline := time.Now().Add(ttl)
	for _, _, lost := obs.counts(); lost == 0 && time.Now().Before(deadline); _, _, lost = obs.counts() {
		time.Sleep(every / 5)
	}
	okBefore, _, _ := obs.counts()
	time.Sleep(4 * every)
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
	lock, err := r.Obtain(t.Context(), "{s}:A4")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
	select {
	case <-lock.Lost():
	case <-time.After(20 * ttl):
		t.Fatal("not lost 20 TTLs after it was obtained without renewals")
	}
	deadline := time.Now().Add(5 * ttl)
	for {
		ok, failed, lost := obs.counts()
		if lost == 1 && ok == 0 && failed == 0 {
			return
		}
		if lost > 1 || time.Now().After(deadline) {
			t.Fatalf("observed %d renewals, %d failed, %d losses; want just 1 loss", ok, failed, lost)
		}
		time.Sleep(ttl / 10)
	}
}
