package flock_test

import (
	"fmt"
	"testing"

	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/flock"
)

// The benchmarks measure flock in the same way as distlock's Redis
// benchmarks measure the Redis locks. The lock directory is a temporary
// directory: its file system (tmpfs or a disk) decides the cost of the
// fencing counter's fsync.
//
//	go test -run '^$' -bench . -benchtime 2s ./distlock/flock

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second: every goroutine has a key of its own.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, goroutines := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			distlocktest.BenchAcquireRelease(b, newLocker(b, b.TempDir(), flock.Options{}), goroutines, "{bench}")
		})
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter blocked on the same key, as p50 and p99: the waiter
// is woken by the release (inotify, on Linux), and its acquire includes
// the fsync of the fencing counter.
func BenchmarkHandoff(b *testing.B) {
	dir := b.TempDir()
	distlocktest.BenchHandoff(b, newLocker(b, dir, flock.Options{}), newLocker(b, dir, flock.Options{}), "{bench}:handoff")
}
