package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"

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
				lock := benchLockers(b, servers)[lib]
				c := startCosts(b, servers)
				// keys of this run only
				distlocktest.BenchAcquireReleaseFunc(b, lock, goroutines, fmt.Sprintf("{bench-%p}", b))
				c.report(b)
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

// costs measures what a benchmark's cycles cost, in measures that the
// load of a shared machine hardly moves, unlike cycles/s: the CPU time of
// this process (the client) and of the nodes, and the time the nodes
// spent running commands (INFO commandstats), each per cycle.
type costs struct {
	nodes     []*goredislib.Client
	client    time.Duration // this process's CPU time at the start
	nodeCPU   time.Duration // the nodes' CPU time at the start
	nodeRunUs int64         // the nodes' command time at the start, in µs
	nodeCalls int64         // the nodes' commands at the start
}

func startCosts(b *testing.B, servers []*server) *costs {
	c := &costs{}
	for _, s := range servers {
		c.nodes = append(c.nodes, s.client(b))
	}
	c.client = processCPU(b)
	c.nodeCPU, c.nodeRunUs, c.nodeCalls = c.readNodes(b)
	return c
}

// report adds the costs since startCosts per cycle to b's results:
// client-µs/op, node-cpu-µs/op, node-cmd-µs/op (time in commands, as
// INFO commandstats counts it: a script counts once, with the commands it
// ran inside it) and node-calls/op.
func (c *costs) report(b *testing.B) {
	client := processCPU(b) - c.client
	nodeCPU, runUs, calls := c.readNodes(b)
	n := float64(b.N)
	b.ReportMetric(float64(client.Microseconds())/n, "client-µs/op")
	b.ReportMetric(float64((nodeCPU-c.nodeCPU).Microseconds())/n, "node-cpu-µs/op")
	b.ReportMetric(float64(runUs-c.nodeRunUs)/n, "node-cmd-µs/op")
	b.ReportMetric(float64(calls-c.nodeCalls)/n, "node-calls/op")
}

// readNodes returns the nodes' CPU time, and the time they spent in
// commands and how many they ran, summed over the nodes. Commands run
// inside a script count in the script's time, and not as calls.
func (c *costs) readNodes(b *testing.B) (cpu time.Duration, runUs, calls int64) {
	b.Helper()
	for _, n := range c.nodes {
		info, err := n.Info(context.Background(), "cpu", "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			name, value, _ := strings.Cut(line, ":")
			switch {
			case name == "used_cpu_sys" || name == "used_cpu_user":
				s, err := strconv.ParseFloat(value, 64)
				if err != nil {
					b.Fatal(err)
				}
				cpu += time.Duration(s * float64(time.Second))
			case strings.HasPrefix(name, "cmdstat_") && name != "cmdstat_info" &&
				!strings.HasPrefix(name, "cmdstat_client") && name != "cmdstat_hello":
				for field := range strings.SplitSeq(value, ",") {
					k, v, _ := strings.Cut(field, "=")
					i, _ := strconv.ParseInt(v, 10, 64)
					switch k {
					case "calls":
						calls += i
					case "usec":
						runUs += i
					}
				}
			}
		}
	}
	return cpu, runUs, calls
}

// processCPU returns the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
