package zklock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The benchmarks measure the ZooKeeper lock in the style of distlock's
// Redis benchmarks, on the throwaway server TestMain starts:
//
//	go test -run '^$' -bench . -benchtime 2s ./distlock/zklock

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second: every goroutine has a key of its own. A cycle is four round trips
// (create, list, watch own node, delete), two of them writes that the
// server logs.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, goroutines := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			locker := dial(b, testRoot(b))
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range goroutines {
				key := fmt.Sprintf("{bench}:seat-%d", g)
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						lock, err := locker.TryObtain(ctx, key)
						if err != nil {
							b.Error(err)
							return
						}
						if err := lock.Release(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
		})
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter queued on the same key, as p50 and p99. Holder and
// waiter have sessions of their own, as two service instances would. The
// waiter is woken by the watch on its predecessor: no polling.
func BenchmarkHandoff(b *testing.B) {
	root := testRoot(b)
	holderLocker, waiterLocker := dial(b, root), dial(b, root)
	ctx := context.Background()
	hist := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
	key := "{bench}:handoff"
	b.ResetTimer()
	for range b.N {
		lock, err := holderLocker.TryObtain(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		// Stored before Release, loaded after the waiter acquired; an
		// atomic because the race detector cannot see that order.
		var releasedAt atomic.Pointer[time.Time]
		got := make(chan time.Duration, 1)
		go func() {
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			lock, err := waiterLocker.Obtain(ctx, key)
			if err != nil {
				b.Error(err)
				close(got)
				return
			}
			took := time.Since(*releasedAt.Load())
			_ = lock.Release(ctx)
			got <- took
		}()
		time.Sleep(5 * time.Millisecond) // the waiter is queued by now
		now := time.Now()
		releasedAt.Store(&now)
		if err := lock.Release(ctx); err != nil {
			b.Fatal(err)
		}
		took, ok := <-got
		if !ok {
			return
		}
		_ = hist.RecordValue(took.Microseconds())
	}
	b.ReportMetric(float64(hist.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(float64(hist.ValueAtQuantile(99)), "p99-µs")
}
