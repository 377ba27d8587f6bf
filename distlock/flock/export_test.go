package flock

import (
	"time"

	"github.com/seatlock/seatlock/distlock"
)

// Hooks for the external tests of this package; they exist only in test
// builds.

// VanishAfterForTest closes the lock files of lk after d, as the kernel
// does when the holding process dies: the keys are free at once, and the
// holder's watchdog finds its files closed. It returns a function that
// cancels the plan, or waits for it if it began.
func VanishAfterForTest(lk distlock.Lock, d time.Duration) (stop func()) {
	l := lk.(*lock)
	done := make(chan struct{})
	t := time.AfterFunc(d, func() {
		defer close(done)
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, f := range l.files {
			_ = f.Close()
		}
	})
	return func() {
		if !t.Stop() {
			<-done
		}
	}
}
