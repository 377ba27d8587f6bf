package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/redlock"
)

// The benchmarks run Redlock on three redis-server processes of their own,
// against go-redsync/redsync on the same three (redsync's Redlock), in the
// same run.
//
//	go test -run '^$' -bench . -benchtime 2s ./distlock/redlock

const benchTTL = 10 * time.Second

// benchPoll is how often a blocked redsync waiter polls (it cannot be
// woken by a release), and the backoff of a Redlock waiter that no release
// wakes.
const benchPoll = 5 * time.Millisecond

func benchLockers(b *testing.B, servers []*server) map[string]distlocktest.LockFunc {
	opts := redlock.Options{
		TTL: benchTTL, Fencing: true, MinBackoff: benchPoll, MaxBackoff: benchPoll,
		// Above the default 50ms: a shared 2-core machine stalls replies
		// beyond that, which would count as failed nodes rather than time.
		NodeTimeout: 250 * time.Millisecond,
	}
	fenced := newLocker(b, servers, opts)
	opts.Fencing = false
	unfenced := newLocker(b, servers, opts)
	var pools []redis.Pool
	for _, s := range servers {
		pools = append(pools, goredis.NewPool(s.client(b)))
	}
	rs := redsync.New(pools...)
	return map[string]distlocktest.LockFunc{
		"redlock":         distlocktest.Funcs(fenced),
		"redlock-nofence": distlocktest.Funcs(unfenced),
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
				// keys of this run only
				distlocktest.BenchAcquireReleaseFunc(b, benchLockers(b, servers)[lib], goroutines, fmt.Sprintf("{bench-%p}", b))
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
			distlocktest.BenchHandoffFunc(b, benchLockers(b, servers)[lib], benchLockers(b, servers)[lib], fmt.Sprintf("{bench-%p}:handoff", b))
		})
	}
}
