// Package wait lets a test wait for what it needs, a condition or a value,
// with a deadline and a failure that names what it waited for.
//
// A sleep that stands in for a condition ("let the waiter start waiting")
// is too short on a busy machine and too long on an idle one; a wait with
// no deadline turns a bug into the 10-minute test timeout and a goroutine
// dump. A test says what it waits for instead:
//
//	wait.For(t, 10*time.Second, "the waiter is queued", func() bool { return m.Waiting("C7") == 1 })
//	err := wait.Recv(t, got, 10*time.Second, "the waiter's Lock")
//
// The deadline is a bound on a hang, never a speed test: choose it so that
// no load a test machine sees can reach it.
package wait

import (
	"testing"
	"time"
)

// maxPoll is the longest pause between two looks at a condition.
const maxPoll = 20 * time.Millisecond

// For polls cond until it holds. When timeout passes first, it fails t
// with what it waited for. It looks again at once at first, then less
// often, every maxPoll at most, so that a condition that soon holds costs
// no idle wait.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for pause := 50 * time.Microsecond; !cond(); pause = min(2*pause, maxPoll) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(pause)
	}
}

// Recv returns the next value from ch, or the zero value once ch is
// closed. When timeout passes first, it fails t with what it waited for.
func Recv[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("not within %v: %s", timeout, what)
		panic("unreachable: Fatalf ends the test's goroutine")
	}
}
