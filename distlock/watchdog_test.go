package distlock_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
)

func TestRedisWatchdogRenewsManyLocks(t *testing.T) {
	// A TTL of two seconds leaves a loaded machine (and -race) time for
	// 200 renewals per third of it.
	const ttl, locks = 2 * time.Second, 200
	r := newRedis(t, newClient(t), distlock.RedisOptions{TTL: ttl, Prefix: testPrefix(t)})
	ctx := t.Context()
	held := make([]distlock.Lock, locks)
	for i := range held {
		l, err := r.TryObtain(ctx, fmt.Sprintf("{s}:seat-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		held[i] = l
	}
	// The time under test, several leases long: every lock needs several
	// renewals to survive it.
	time.Sleep(3 * ttl)
	for i, l := range held {
		if err := l.Err(); err != nil {
			t.Errorf("lock %d after 3 TTLs: %v", i, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release of lock %d after 3 TTLs: %v (its lease ran out)", i, err)
		}
	}
}

func TestRedisLeavesNoGoroutine(t *testing.T) {
	// A short RenewEvery keeps renewals in flight while the locks are
	// released and the locker closed.
	const ttl, every = 300 * time.Millisecond, 5 * time.Millisecond
	prefix := testPrefix(t)
	c := newClient(t)
	ctx := t.Context()
	// The client's pool and the test's own helpers run goroutines too:
	// warm the pool up before counting.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	r := distlock.NewRedis(c, distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: prefix})
	var held []distlock.Lock
	for i := range 20 {
		l, err := r.TryObtain(ctx, fmt.Sprintf("{s}:seat-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	// A waiter starts the subscriber's goroutine.
	waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := r.Obtain(waitCtx, "{s}:seat-0")
	cancel()
	if err == nil {
		t.Fatal("Obtain of a held key succeeded")
	}
	// Renewals run meanwhile, so that some are likely in flight at the
	// Release and Close below; the test holds whether they are or not.
	time.Sleep(3 * every)
	for _, l := range held[:10] {
		_ = l.Release(ctx) // this test is about goroutines, not leases
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Close declared the locks it still held lost; Release still frees them.
	for _, l := range held[10:] {
		select {
		case <-l.Lost():
		default:
			t.Fatal("a lock still held at Close is not lost")
		}
		_ = l.Release(ctx)
	}

	// Goroutines that ended may take a moment to leave the count.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after Release and Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}
