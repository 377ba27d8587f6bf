package watchdog_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

// lease is a lock whose renewals succeed (extending it by ttl) or fail, as
// the test says.
type lease struct {
	w   *watchdog.Watchdog
	e   watchdog.Entry
	ttl time.Duration

	mu        sync.Mutex
	fail      error     // returned by Renew when not nil
	renewals  int       // successful ones
	expiredAt time.Time // when Expire was called; zero: not yet
	last      error     // Expire's argument
}

func (l *lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.renewals++
	l.w.Extend(&l.e, time.Now().Add(l.ttl))
	return nil
}

func (l *lease) Expire(last error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiredAt, l.last = time.Now(), last
}

func watch(t *testing.T, w *watchdog.Watchdog, ttl time.Duration) *lease {
	t.Helper()
	l := &lease{w: w, ttl: ttl}
	if !w.Watch(&l.e, l, time.Now().Add(ttl)) {
		t.Fatal("Watch refused a lock before Close")
	}
	return l
}

// In a synctest bubble time is the bubble's own: a lease of 3s runs out
// at exactly 3s, however loaded the machine is, and the bubble fails the
// test if a goroutine of it is left blocked at the end.

func TestRenewalsKeepALease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watchdog.New(watchdog.Options{Every: time.Second})
		l := watch(t, w, 3*time.Second)
		time.Sleep(time.Minute)
		l.mu.Lock()
		renewals, expired := l.renewals, l.expiredAt
		l.mu.Unlock()
		if !expired.IsZero() {
			t.Fatalf("a lease renewed every second expired at %v", expired)
		}
		if renewals < 50 {
			t.Errorf("%d renewals in a minute, want about 60", renewals)
		}
		w.Unwatch(&l.e)
		time.Sleep(time.Nanosecond) // the goroutine returns at once
	})
}

func TestFailedRenewalsExpireAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lost int
		w := watchdog.New(watchdog.Options{Every: time.Second, OnLost: func() { lost++ }})
		start := time.Now()
		l := watch(t, w, 3*time.Second)
		refused := errors.New("server unreachable")
		l.mu.Lock()
		l.fail = refused
		l.mu.Unlock()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		if got := l.expiredAt.Sub(start); got != 3*time.Second {
			t.Errorf("expired %v after it was taken, want at its deadline, 3s", got)
		}
		if !errors.Is(l.last, refused) {
			t.Errorf("Expire got %v, want the last renewal's error", l.last)
		}
		if lost != 1 {
			t.Errorf("OnLost called %d times, want 1", lost)
		}
	})
}

// A locker without Close (pglock's) relies on this: the goroutine ends as
// soon as no lock is left, not at its next look, and starts again with the
// next lock. The bubble fails the test if it is still waiting a nanosecond
// after the last Unwatch.
func TestNoGoroutineWithoutLocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watchdog.New(watchdog.Options{Every: time.Second})
		for range 2 {
			l := watch(t, w, 3*time.Second)
			time.Sleep(1500 * time.Millisecond) // one renewal, the next due in 1s
			w.Unwatch(&l.e)
			time.Sleep(time.Nanosecond)
		}
	})
}

func TestCloseReturnsTheLocksStillWatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := watchdog.New(watchdog.Options{Every: time.Second})
		held := watch(t, w, 3*time.Second)
		released := watch(t, w, 3*time.Second)
		w.Unwatch(&released.e)
		left := w.Close()
		if len(left) != 1 || left[0] != held {
			t.Errorf("Close returned %v, want only the lock still held", left)
		}
		l := &lease{w: w, ttl: time.Second}
		if w.Watch(&l.e, l, time.Now().Add(time.Second)) {
			t.Error("Watch after Close accepted a lock")
		}
	})
}
