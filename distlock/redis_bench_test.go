package distlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/internal/testenv"
)

// The benchmarks compare distlock.Redis with two well-known Go Redis locks,
// bsm/redislock and go-redsync/redsync (on one server), in the same run.
//
//	TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench . -benchtime 2s -count 5 -benchmem ./distlock

const benchTTL = 10 * time.Second

// anchorPoll is how often the anchors poll a held key: neither has a way
// to be woken by a release.
const anchorPoll = 10 * time.Millisecond

func benchClient(b *testing.B) *redis.Client {
	b.Helper()
	opt, err := redis.ParseURL(testenv.RedisURL(b))
	if err != nil {
		b.Fatal(err)
	}
	opt.PoolSize = 64 // as many connections as the busiest benchmark has goroutines
	c := redis.NewClient(opt)
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// lockers returns a fresh locker of each library on its own client.
func lockers(b *testing.B, prefix string) map[string]distlocktest.LockFunc {
	pipelined := benchClient(b)
	ap, err := pipelined.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	rs := redsync.New(goredis.NewPool(benchClient(b)))
	return map[string]distlocktest.LockFunc{
		"distlock": distlocktest.Funcs(newRedis(b, benchClient(b), distlock.RedisOptions{TTL: benchTTL, Prefix: prefix})), // watchdog and fencing on
		"distlock+autopipeline": distlocktest.Funcs(newRedis(b, autopipelined{ap, pipelined},
			distlock.RedisOptions{TTL: benchTTL, Prefix: prefix})),
		"redislock":              redislockBench(redislock.New(benchClient(b)), prefix),
		"redislock+autopipeline": redislockBench(redislock.New(ap), prefix),
		"redsync": func(ctx context.Context, key string, blocking bool) (func(context.Context) error, error) {
			tries := 1
			if blocking {
				tries = 1 << 30 // until ctx ends
			}
			m := rs.NewMutex(prefix+key, redsync.WithExpiry(benchTTL), redsync.WithTries(tries), redsync.WithRetryDelay(anchorPoll))
			if err := m.LockContext(ctx); err != nil {
				return nil, err
			}
			return func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }, nil
		},
	}
}

// redislockBench adapts a bsm/redislock client to the benchmarks.
func redislockBench(c *redislock.Client, prefix string) distlocktest.LockFunc {
	return func(ctx context.Context, key string, blocking bool) (func(context.Context) error, error) {
		opt := &redislock.Options{}
		if blocking {
			opt.RetryStrategy = redislock.LinearBackoff(anchorPoll)
		}
		l, err := c.Obtain(ctx, prefix+key, benchTTL, opt)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

// autopipelined sends the scripts through go-redis's (experimental)
// autopipeliner, which batches the commands of concurrent callers into one
// write and one read, and subscribes on the plain client.
type autopipelined struct {
	*redis.AutoPipeliner
	client *redis.Client
}

func (a autopipelined) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return a.client.Subscribe(ctx, channels...)
}

var libraries = []string{"distlock", "redislock", "redsync"}

// throughputLibraries adds to libraries both Redis locks on a client that
// pipelines the commands of concurrent callers, the same for both: it
// shows what the transport, rather than the lock, is worth.
var throughputLibraries = append(libraries[:len(libraries):len(libraries)], "distlock+autopipeline", "redislock+autopipeline")

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second: every goroutine has a key of its own.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, goroutines := range []int{1, 64} {
		for _, lib := range throughputLibraries {
			b.Run(fmt.Sprintf("%s/goroutines=%d", lib, goroutines), func(b *testing.B) {
				distlocktest.BenchAcquireReleaseFunc(b, lockers(b, testPrefix(b))[lib], goroutines, "{bench}")
			})
		}
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter blocked on the same key, as p50 and p99. The waiter
// and the holder use lockers of their own, as two service instances would.
func BenchmarkHandoff(b *testing.B) {
	for _, lib := range libraries {
		b.Run(lib, func(b *testing.B) {
			prefix := testPrefix(b)
			distlocktest.BenchHandoffFunc(b, lockers(b, prefix)[lib], lockers(b, prefix)[lib], "{bench}:handoff")
		})
	}
}
