package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// TestRedisWaitReplicas runs a private primary with one replica: with the
// replica connected, an acquire with WaitReplicas 1 is granted and the
// replica has the lock key when Obtain returns; with the replica gone, it
// fails with ErrNotReplicated once WaitTimeout has passed, and leaves no
// lock key behind.
func TestRedisWaitReplicas(t *testing.T) {
	primary, replica := startReplicated(t)
	pc := redis.NewClient(connOptions(primary.Addr, 0))
	t.Cleanup(func() { _ = pc.Close() })
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	waitReplication(t, pc, rc)

	const waitTimeout = 300 * time.Millisecond
	locks := newRedis(t, pc, distlock.RedisOptions{TTL: 5 * time.Second, WaitReplicas: 1, WaitTimeout: waitTimeout})
	key := "{wait}:A1"
	lockKey := locks.LockKeyForTest(key)

	t.Run("replica connected: granted, and the replica has it", func(t *testing.T) {
		l, err := locks.Obtain(t.Context(), key)
		if err != nil {
			t.Fatalf("Obtain with the replica connected: %v", err)
		}
		// WAIT returned only once the replica acknowledged the write, so
		// no replication delay can hide it here.
		if n, err := rc.Exists(t.Context(), lockKey).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s on the replica = %d, %v right after Obtain; want 1", lockKey, n, err)
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})

	t.Run("replica stopped: not granted, nothing left behind", func(t *testing.T) {
		replica.Stop()
		wait.For(t, 5*time.Second, "the primary sees no replica", func() bool {
			info, err := pc.Info(context.Background(), "replication").Result()
			return err == nil && strings.Contains(info, "connected_slaves:0")
		})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		for _, try := range []struct {
			name   string
			obtain func(context.Context, ...string) (distlock.Lock, error)
		}{{"Obtain", locks.Obtain}, {"TryObtain", locks.TryObtain}} {
			start := time.Now()
			l, err := try.obtain(ctx, key)
			took := time.Since(start)
			if err == nil {
				_ = l.Release(t.Context())
				t.Fatalf("%s with no replica: granted, want ErrNotReplicated", try.name)
			}
			if !errors.Is(err, distlock.ErrNotReplicated) || errors.Is(err, distlock.ErrNotAcquired) {
				t.Errorf("%s with no replica: %v, want ErrNotReplicated and not ErrNotAcquired", try.name, err)
			}
			// WAIT waits out its timeout when too few replicas answer, and
			// the failure is final: no retry until the context ends.
			if took < waitTimeout {
				t.Errorf("%s took %v, want at least WaitTimeout %v", try.name, took, waitTimeout)
			}
			if ctx.Err() != nil {
				t.Errorf("%s with no replica waited out its context", try.name)
			}
			if n, err := pc.Exists(t.Context(), lockKey).Result(); err != nil || n != 0 {
				t.Errorf("after the failed %s, EXISTS %s on the primary = %d, %v; want 0", try.name, lockKey, n, err)
			}
		}
	})
}

// startReplicated starts a private Redis primary and a replica of it.
func startReplicated(t *testing.T) (primary, replica *testenv.RedisServer) {
	t.Helper()
	// No delay before the full sync that brings the replica in.
	primary = testenv.StartRedisServer(t, func(int, string) []string {
		return []string{"--repl-diskless-sync-delay", "0"}
	})
	_, primaryPort, _ := strings.Cut(primary.Addr, ":")
	replica = testenv.StartRedisServer(t, func(int, string) []string {
		return []string{"--replicaof", "127.0.0.1", primaryPort}
	})
	return primary, replica
}

// waitReplication waits until the replica is in sync with the primary.
func waitReplication(t *testing.T, primary, replica *redis.Client) {
	t.Helper()
	wait.For(t, 10*time.Second, "the replica is in sync", func() bool {
		p, err1 := primary.Info(context.Background(), "replication").Result()
		r, err2 := replica.Info(context.Background(), "replication").Result()
		return err1 == nil && err2 == nil && strings.Contains(p, "connected_slaves:1") &&
			strings.Contains(r, "master_link_status:up")
	})
	// After a diskless sync the primary streams nothing to the replica
	// (a WAIT's request for acknowledgements included) until the replica
	// has acknowledged once, which it does on its own once a second: one
	// write waited for on one connection, with room for that second.
	conn := primary.Conn()
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := conn.Set(ctx, "{wait}:synced", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica's first acknowledgement: %d, %v", n, err)
	}
}

// connOptions are the options of a client whose acquires wait for replicas:
// such an acquire runs on a redis.Conn of its own, and go-redis's handshake
// for maintenance notifications, refused by a Redis before 8, then writes
// the options every such Conn shares without a lock they share (a data
// race), so the handshake is off, as cmd/api has it.
func connOptions(addr string, poolSize int) *redis.Options {
	return &redis.Options{Addr: addr, PoolSize: poolSize,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}}
}

func TestNewRedisWaitReplicasPanics(t *testing.T) {
	tests := []struct {
		name   string
		client distlock.RedisClient
		opts   distlock.RedisOptions
	}{
		{"negative WaitReplicas", redis.NewClient(&redis.Options{}), distlock.RedisOptions{WaitReplicas: -1}},
		{"WaitTimeout of half the TTL", redis.NewClient(&redis.Options{}),
			distlock.RedisOptions{TTL: time.Second, WaitReplicas: 1, WaitTimeout: 500 * time.Millisecond}},
		{"a Cluster client", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
			distlock.RedisOptions{WaitReplicas: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.client.(interface{ Close() error }).Close()
			defer func() {
				if recover() == nil {
					t.Error("NewRedis did not panic")
				}
			}()
			distlock.NewRedis(tt.client, tt.opts)
		})
	}
}

// TestRedisWaitReplicasBoundedUnderLoad pauses the only replica (SIGSTOP:
// the primary still counts it, and it acknowledges nothing), and starts
// many more acquires at once than the client's pool has connections, each
// of which keeps its connection for a WAIT. Every acquire must fail with
// ErrNotReplicated or a Redis error, none is granted, and none waits for
// the WAITs of the others: each ends within WaitTimeout of its start
// (and round trips), where a pool that queued them would end the last
// after the WAITs of all those before it. The bound checked is five times
// WaitTimeout, for a machine under load; the queue would take twelve.
//
// It also checks that with WaitClient the acquires' commands (the script
// and WAIT) go on that client, never on the locker's own.
func TestRedisWaitReplicasBoundedUnderLoad(t *testing.T) {
	primary, replica := startReplicated(t)
	// counted returns a client of the primary with a pool of poolSize
	// connections, and a count of the WAITs sent on it.
	counted := func(poolSize int) (*redis.Client, *atomic.Int64) {
		c := redis.NewClient(connOptions(primary.Addr, poolSize))
		t.Cleanup(func() { _ = c.Close() })
		var waits atomic.Int64
		c.AddHook(testenv.AfterCommand(func(_ context.Context, cmd redis.Cmder, err error) error {
			if cmd.Name() == "wait" {
				waits.Add(1)
			}
			return err
		}))
		return c, &waits
	}
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	t.Cleanup(func() { _ = rc.Close() })
	pc, _ := counted(10)
	waitReplication(t, pc, rc)
	replica.Pause(t)

	const (
		waitTimeout = 500 * time.Millisecond
		poolSize    = 2
		acquires    = 24 // twelve rounds of WAITs on a queue of two connections
		bound       = 5 * waitTimeout
	)
	try := func(t *testing.T, locks *distlock.Redis) {
		t.Helper()
		var wg sync.WaitGroup
		took := make([]time.Duration, acquires)
		errs := make([]error, acquires)
		for i := range acquires {
			wg.Go(func() {
				start := time.Now()
				l, err := locks.TryObtain(t.Context(), fmt.Sprintf("{bounded}:%s:%d", t.Name(), i))
				took[i], errs[i] = time.Since(start), err
				if err == nil {
					_ = l.Release(context.Background())
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil {
				t.Errorf("acquire %d granted with the replica paused", i)
			} else if errors.Is(err, distlock.ErrNotAcquired) {
				t.Errorf("acquire %d: %v; want ErrNotReplicated or a Redis error, not ErrNotAcquired", i, err)
			}
		}
		if slowest := slices.Max(took); slowest > bound {
			t.Errorf("the slowest of %d acquires on %d connections took %v, want under %v (WaitTimeout %v): acquires queued behind each other's WAITs",
				acquires, poolSize, slowest, bound, waitTimeout)
		}
	}

	t.Run("on the locker's client", func(t *testing.T) {
		own, _ := counted(poolSize)
		try(t, newRedis(t, own, distlock.RedisOptions{TTL: 10 * time.Second, WaitReplicas: 1, WaitTimeout: waitTimeout}))
	})
	t.Run("on a WaitClient", func(t *testing.T) {
		own, ownWaits := counted(poolSize)
		waitClient, waits := counted(poolSize)
		try(t, newRedis(t, own, distlock.RedisOptions{
			TTL: 10 * time.Second, WaitReplicas: 1, WaitTimeout: waitTimeout, WaitClient: waitClient,
		}))
		if n := ownWaits.Load(); n != 0 {
			t.Errorf("%d WAITs on the locker's own client, want 0: they belong on WaitClient", n)
		}
		if n := waits.Load(); n == 0 {
			t.Error("no WAIT on WaitClient")
		}
	})
}
