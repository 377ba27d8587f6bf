package redlock_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/seatlock/seatlock/distlock/redlock"
)

// The benchmarks run Redlock on three redis-server processes of their own,
// against go-redsync/redsync on the same three (redsync's Redlock), in the
// same run.
//
//	go test -run '^$' -bench . -benchtime 2s ./distlock/redlock

const benchTTL = 10 * time.Second

// benchPoll is how often a blocked waiter polls: neither library has a way
// to be woken by a release across N nodes.
const benchPoll = 5 * time.Millisecond

// benchLocker takes one key, waiting (blocking) or not, and gives back a
// release function.
type benchLocker func(ctx context.Context, key string, blocking bool) (release func(context.Context) error, err error)

func benchLockers(b *testing.B, servers []*server) map[string]benchLocker {
	opts := redlock.Options{
		TTL: benchTTL, Fencing: true, MinBackoff: benchPoll, MaxBackoff: benchPoll,
		// Above the default 50ms: a shared 2-core machine stalls replies
		// beyond that, which would count as failed nodes rather than time.
		NodeTimeout: 250 * time.Millisecond,
	}
	fenced := redlock.New(clients(b, servers), opts)
	opts.Fencing = false
	unfenced := redlock.New(clients(b, servers), opts)
	ours := func(l *redlock.Locker) benchLocker {
		return func(ctx context.Context, key string, blocking bool) (func(context.Context) error, error) {
			obtain := l.TryObtain
			if blocking {
				obtain = l.Obtain
			}
			lock, err := obtain(ctx, key)
			if err != nil {
				return nil, err
			}
			return lock.Release, nil
		}
	}
	var pools []redis.Pool
	for _, s := range servers {
		pools = append(pools, goredis.NewPool(s.client(b)))
	}
	rs := redsync.New(pools...)
	return map[string]benchLocker{
		"redlock":         ours(fenced),
		"redlock-nofence": ours(unfenced),
		"redsync": func(ctx context.Context, key string, blocking bool) (func(context.Context) error, error) {
			tries := 1
			if blocking {
				tries = 1 << 30 // until ctx ends
			}
			m := rs.NewMutex(key, redsync.WithExpiry(benchTTL), redsync.WithTries(tries), redsync.WithRetryDelay(benchPoll))
			if err := m.LockContext(ctx); err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }, nil
		},
	}
}

var libraries = []string{"redlock", "redlock-nofence", "redsync"}

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second on three nodes: every goroutine has a key of its own.
func BenchmarkAcquireRelease(b *testing.B) {
	servers := startServers(b, 3)
	for _, goroutines := range []int{1, 16} {
		for _, lib := range libraries {
			b.Run(fmt.Sprintf("%s/goroutines=%d", lib, goroutines), func(b *testing.B) {
				lock := benchLockers(b, servers)[lib]
				ctx := context.Background()
				run := fmt.Sprintf("%p", b) // keys of this run only
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for g := range goroutines {
					key := fmt.Sprintf("{bench-%s}:seat-%d", run, g)
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
			})
		}
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter blocked on the same key, as p50 and p99. The waiter
// and the holder use lockers of their own, as two service instances would.
func BenchmarkHandoff(b *testing.B) {
	servers := startServers(b, 3)
	for _, lib := range libraries {
		b.Run(lib, func(b *testing.B) {
			holderLock, waiterLock := benchLockers(b, servers)[lib], benchLockers(b, servers)[lib]
			ctx := context.Background()
			hist := hdrhistogram.New(1, int64(time.Second/time.Microsecond), 3)
			key := fmt.Sprintf("{bench-%p}:handoff", b)
			b.ResetTimer()
			for range b.N {
				release, err := holderLock(ctx, key, false)
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
					release, err := waiterLock(ctx, key, true)
					if err != nil {
						b.Error(err)
						close(got)
						return
					}
					took := time.Since(*releasedAt.Load())
					_ = release(ctx)
					got <- took
				}()
				time.Sleep(5 * time.Millisecond) // the waiter is blocked by now
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
		})
	}
}
