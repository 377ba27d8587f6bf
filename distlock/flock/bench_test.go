package flock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

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
			l := newLocker(b, b.TempDir(), flock.Options{})
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range goroutines {
				key := fmt.Sprintf("{bench}:seat-%d", g)
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						lock, err := l.TryObtain(ctx, key)
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
// acquire of a waiter polling the same key, as p50 and p99: with the
// default backoff, up to MaxBackoff (50ms).
func BenchmarkHandoff(b *testing.B) {
	dir := b.TempDir()
	holder, waiter := newLocker(b, dir, flock.Options{}), newLocker(b, dir, flock.Options{})
	ctx := context.Background()
	hist := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
	key := "{bench}:handoff"
	b.ResetTimer()
	for range b.N {
		lock, err := holder.TryObtain(ctx, key)
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
			lock, err := waiter.Obtain(ctx, key)
			if err != nil {
				b.Error(err)
				close(got)
				return
			}
			took := time.Since(*releasedAt.Load())
			_ = lock.Release(ctx)
			got <- took
		}()
		time.Sleep(5 * time.Millisecond) // the waiter is polling by now
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
