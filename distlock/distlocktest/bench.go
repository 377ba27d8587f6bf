package distlocktest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seatlock/seatlock/distlock"
)

// TryLocker is a Locker that can also make one attempt without waiting, as
// every backend's Locker can. The benchmarks take uncontended locks with it.
type TryLocker interface {
	distlock.Locker
	TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error)
}

// LockFunc takes key and returns the function that releases it: with
// wait, it waits for the key; without, it makes one attempt. The Redis
// benchmarks compare other libraries with it, whose locks are no Lockers.
type LockFunc func(ctx context.Context, key string, wait bool) (release func(context.Context) error, err error)

// Funcs returns l as a LockFunc.
func Funcs(l TryLocker) LockFunc {
	return func(ctx context.Context, key string, wait bool) (func(context.Context) error, error) {
		obtain := l.TryObtain
		if wait {
			obtain = l.Obtain
		}
		lock, err := obtain(ctx, key)
		if err != nil {
			return nil, err
		}
		return lock.Release, nil
	}
}

// BenchAcquireRelease measures uncontended acquire+release cycles with
// goroutines goroutines, each on a key of its own (keyPrefix plus a number),
// and reports them as cycles/s. Every backend's benchmark calls it, so that
// docs/benchmarks.md compares like with like.
func BenchAcquireRelease(b *testing.B, l TryLocker, goroutines int, keyPrefix string) {
	BenchAcquireReleaseFunc(b, Funcs(l), goroutines, keyPrefix)
}

// BenchAcquireReleaseFunc is BenchAcquireRelease for a LockFunc.
func BenchAcquireReleaseFunc(b *testing.B, lock LockFunc, goroutines int, keyPrefix string) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for g := range goroutines {
		key := fmt.Sprintf("%s:seat-%d", keyPrefix, g)
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				release, err := lock(ctx, key, false)
				if err != nil {
					b.Error(err)
					return
				}
				if err := release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchHandoff measures the time from a holder's release to the acquire of
// a waiter blocked on the same key, and reports its p50 and p99 in µs.
// holder and waiter should be separate Lockers (clients, sessions) on the
// same keys, as two service instances would have.
func BenchHandoff(b *testing.B, holder, waiter TryLocker, key string) {
	BenchHandoffFunc(b, Funcs(holder), Funcs(waiter), key)
}

// BenchHandoffFunc is BenchHandoff for LockFuncs.
func BenchHandoffFunc(b *testing.B, holder, waiter LockFunc, key string) {
	ctx := context.Background()
	hist := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
	b.ResetTimer()
	for range b.N {
		release, err := holder(ctx, key, false)
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
			release, err := waiter(ctx, key, true)
			if err != nil {
				b.Error(err)
				close(got)
				return
			}
			took := time.Since(*releasedAt.Load())
			_ = release(ctx)
			got <- took
		}()
		time.Sleep(5 * time.Millisecond) // the waiter is waiting by now
		now := time.Now()
		releasedAt.Store(&now)
		if err := release(ctx); err != nil {
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
