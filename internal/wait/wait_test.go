package wait_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// call, as a real Fatalf ends the test's goroutine.
type recorder struct {
	testing.TB
	failed string
}

type fatal struct{}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(fatal{})
}

// run calls f with a recorder and returns what it failed with, "" if
// nothing.
func run(f func(t testing.TB)) string {
	r := &recorder{}
	func() {
		defer func() {
			if v := recover(); v != nil && v != (fatal{}) {
				panic(v)
			}
		}()
		f(r)
	}()
	return r.failed
}

func TestFor(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if msg := run(func(t testing.TB) {
		wait.For(t, 10*time.Second, "three counts", func() bool { return n.Load() == 3 })
	}); msg != "" {
		t.Errorf("For a condition that comes to hold failed: %s", msg)
	}
	msg := run(func(t testing.TB) {
		wait.For(t, 30*time.Millisecond, "the impossible", func() bool { return false })
	})
	if msg != "not within 30ms: the impossible" {
		t.Errorf("For a condition that never holds failed with %q, want it to name what it waited for", msg)
	}
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	var got int
	if msg := run(func(t testing.TB) { got = wait.Recv(t, ch, 10*time.Second, "a number") }); msg != "" || got != 7 {
		t.Errorf("Recv of a sent value = %d, failed with %q; want 7", got, msg)
	}
	msg := run(func(t testing.TB) { wait.Recv(t, ch, 30*time.Millisecond, "a second number") })
	if msg != "not within 30ms: a second number" {
		t.Errorf("Recv on an empty channel failed with %q, want it to name what it waited for", msg)
	}
	close(ch)
	if msg := run(func(t testing.TB) { got = wait.Recv(t, ch, 10*time.Second, "the end") }); msg != "" || got != 0 {
		t.Errorf("Recv on a closed channel = %d, failed with %q; want 0", got, msg)
	}
}
