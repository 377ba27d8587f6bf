package pglock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/google/uuid"

	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/internal/testenv"
)

// The benchmarks measure pglock in the same way as distlock's Redis
// benchmarks measure the Redis locks:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test -run '^$' -bench . -benchtime 2s ./distlock/pglock

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second (TryObtain, then Release: two round trips): every goroutine has a
// key of its own.
func BenchmarkAcquireRelease(b *testing.B) {
	db := testenv.NewDatabase(b)
	for _, goroutines := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			l := pglock.New(newPool(b, db, int32(goroutines)), pglock.Options{})
			ctx := context.Background()
			prefix := uuid.NewString()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range goroutines {
				key := fmt.Sprintf("{%s}:seat-%d", prefix, g)
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
// acquire of a waiter blocked in pg_advisory_lock on the same key, as p50
// and p99. Holder and waiter have lockers and pools of their own, as two
// service instances would.
func BenchmarkHandoff(b *testing.B) {
	db := testenv.NewDatabase(b)
	holder := pglock.New(newPool(b, db, 2), pglock.Options{})
	waiter := pglock.New(newPool(b, db, 2), pglock.Options{})
	ctx := context.Background()
	hist := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
	key := "{" + uuid.NewString() + "}:handoff"
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
		time.Sleep(5 * time.Millisecond) // the waiter is blocked by now
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
