package zklock_test

import (
	"fmt"
	"testing"

	"github.com/seatlock/seatlock/distlock/distlocktest"
)

// The benchmarks measure the ZooKeeper lock in the style of distlock's
// Redis benchmarks, on the throwaway server TestMain starts:
//
//	go test -run '^$' -bench . -benchtime 2s ./distlock/zklock

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second: every goroutine has a key of its own. A cycle is seven round
// trips, because the last releaser of a key deletes its directory: the
// create finds no directory, creates it, creates the node, lists, watches
// its node, deletes it and then the directory; five of them creates and
// deletes, which the ensemble agrees on and logs.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, goroutines := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			distlocktest.BenchAcquireRelease(b, dial(b, testRoot(b)), goroutines, "{bench}")
		})
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter queued on the same key, as p50 and p99. Holder and
// waiter have sessions of their own, as two service instances would. The
// waiter is woken by the watch on its predecessor: no polling.
func BenchmarkHandoff(b *testing.B) {
	root := testRoot(b)
	distlocktest.BenchHandoff(b, dial(b, root), dial(b, root), "{bench}:handoff")
}
