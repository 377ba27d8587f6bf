package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/internal/wait"
)

const testTTL = time.Second

// lockKey is the Redis key that holds key's owner token, as the distlock
// package doc names it: the prefix, "lock:", and the key whole.
func lockKey(prefix, key string) string { return prefix + "lock:" + key }

// newRedis returns a distlock.Redis on a cluster client of its own, closed
// when t ends.
func newRedis(t testing.TB, addrs []string, opts distlock.RedisOptions) *distlock.Redis {
	t.Helper()
	r := distlock.NewRedis(newClusterClient(t, addrs), opts)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func TestRedisConformanceOnCluster(t *testing.T) {
	addrs := startCluster(t)
	// Every subtest gets one prefix, shared by all the lockers it makes.
	var mu sync.Mutex
	prefixes := map[string]string{}
	prefixOf := func(t *testing.T) string {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := prefixes[t.Name()]; ok {
			return p
		}
		p := "cluster-test:" + uuid.NewString()[:8] + ":"
		prefixes[t.Name()] = p
		return p
	}
	locker := func(renewEvery time.Duration) func(t *testing.T) distlock.Locker {
		return func(t *testing.T) distlock.Locker {
			return newRedis(t, addrs, distlock.RedisOptions{TTL: testTTL, RenewEvery: renewEvery, Prefix: prefixOf(t)})
		}
	}
	distlocktest.Run(t, locker(0), distlocktest.Options{
		TTL:            testTTL,
		Fencing:        true,
		NewNonRenewing: locker(-1),
		Expire: func(t *testing.T, key string) {
			k := lockKey(prefixOf(t), key)
			if n, err := newClusterClient(t, addrs).Del(t.Context(), k).Result(); err != nil || n != 1 {
				t.Fatalf("delete %s = %d, %v; want 1, nil", k, n, err)
			}
		},
	})
}

// TestMultiSeatOnCluster takes five seats of one screening in one Obtain:
// their names share the screening's hash tag, so they live in one slot and
// one script takes them all on one master.
func TestMultiSeatOnCluster(t *testing.T) {
	addrs := startCluster(t)
	client := newClusterClient(t, addrs)
	prefix := "cluster-test:" + uuid.NewString()[:8] + ":"
	a := newRedis(t, addrs, distlock.RedisOptions{TTL: testTTL, Prefix: prefix})
	b := newRedis(t, addrs, distlock.RedisOptions{TTL: testTTL, Prefix: prefix})
	ctx := t.Context()

	var seats []string
	for i := 1; i <= 5; i++ {
		seats = append(seats, fmt.Sprintf("{screening-1}:A%d", i))
	}
	slot := keySlot(t, client, lockKey(prefix, seats[0]))
	for _, s := range seats {
		if got := keySlot(t, client, lockKey(prefix, s)); got != slot {
			t.Fatalf("slot of %q = %d, want %d like %q", s, got, slot, seats[0])
		}
	}

	lock, err := a.TryObtain(ctx, seats...)
	if err != nil {
		t.Fatalf("TryObtain(%q): %v", seats, err)
	}
	for _, s := range seats {
		if n, err := client.Exists(ctx, lockKey(prefix, s)).Result(); err != nil || n != 1 {
			t.Fatalf("lock key of %q exists = %d, %v; want 1", s, n, err)
		}
		if lock.Token(s) <= 0 {
			t.Fatalf("Token(%q) = %d, want a fencing token", s, lock.Token(s))
		}
	}
	// A rival set that overlaps in one seat gets none of them.
	if _, err := b.TryObtain(ctx, "{screening-1}:A5", "{screening-1}:A6"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain of an overlapping set = %v, want ErrNotAcquired", err)
	}
	if n, err := client.Exists(ctx, lockKey(prefix, "{screening-1}:A6")).Result(); err != nil || n != 0 {
		t.Fatalf("A6 taken by a refused set: exists = %d, %v", n, err)
	}

	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// TestReleaseWakesWaiterOnCluster checks that the shared pub/sub
// subscriber works on a Cluster client: a waiter whose backoff polling
// would take half a minute at least is woken by the release's PUBLISH,
// which the cluster broadcasts to every node, whichever node the
// subscriber is connected to.
func TestReleaseWakesWaiterOnCluster(t *testing.T) {
	addrs := startCluster(t)
	prefix := "cluster-test:" + uuid.NewString()[:8] + ":"
	// A waiter polls no sooner than half its backoff, and no later than
	// the holder's lease ends: both are a minute.
	opts := distlock.RedisOptions{TTL: time.Minute, Prefix: prefix, MinBackoff: time.Minute, MaxBackoff: time.Minute}
	holder, waiter := newRedis(t, addrs, opts), newRedis(t, addrs, opts)
	ctx := t.Context()

	for i := 1; i <= 3; i++ { // seats in slots of different masters
		seat := fmt.Sprintf("{screening-%d}:A3", i)
		lock, err := holder.TryObtain(ctx, seat)
		if err != nil {
			t.Fatalf("TryObtain(%q): %v", seat, err)
		}
		got := make(chan error, 1)
		go func() {
			l, err := waiter.Obtain(ctx, seat)
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		// The waiter subscribes after its first attempt has marked the
		// key: from then on the release publishes, and reaches it.
		channel := lockKey(prefix, seat)
		wait.For(t, 10*time.Second, "the waiter on "+seat+" is subscribed", func() bool { return subscribers(t, addrs, channel) > 0 })
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release(%q): %v", seat, err)
		}
		if err := wait.Recv(t, got, 20*time.Second, "the waiter on "+seat+", woken by the release rather than its poll"); err != nil {
			t.Fatalf("waiter on %q: %v", seat, err)
		}
	}
}

// subscribers returns how many clients are subscribed to channel on the
// nodes at addrs, all told: a subscriber is connected to one of them.
func subscribers(t *testing.T, addrs []string, channel string) int64 {
	t.Helper()
	var n int64
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		counts, err := c.PubSubNumSub(t.Context(), channel).Result()
		_ = c.Close()
		if err != nil {
			t.Fatalf("PUBSUB NUMSUB on %s: %v", addr, err)
		}
		n += counts[channel]
	}
	return n
}

// TestScreeningsSpreadOverMasters checks that the seats of different
// screenings land on different masters, so that the lock load is sharded,
// and that locks on every master work.
func TestScreeningsSpreadOverMasters(t *testing.T) {
	addrs := startCluster(t)
	client := newClusterClient(t, addrs)
	prefix := "cluster-test:" + uuid.NewString()[:8] + ":"
	locker := newRedis(t, addrs, distlock.RedisOptions{TTL: testTTL, Prefix: prefix})
	ctx := t.Context()

	masters := map[string][]string{} // master address -> screenings whose locks it serves
	for i := 1; i <= 12; i++ {
		seat := fmt.Sprintf("{screening-%d}:A1", i)
		lock, err := locker.TryObtain(ctx, seat, fmt.Sprintf("{screening-%d}:A2", i))
		if err != nil {
			t.Fatalf("TryObtain on screening %d: %v", i, err)
		}
		master, err := client.MasterForKey(ctx, lockKey(prefix, seat))
		if err != nil {
			t.Fatal(err)
		}
		addr := master.Options().Addr
		// The lock key is really on that master, not just routed there.
		if n, err := master.Exists(ctx, lockKey(prefix, seat)).Result(); err != nil || n != 1 {
			t.Fatalf("lock key of %q on %s: exists = %d, %v", seat, addr, n, err)
		}
		masters[addr] = append(masters[addr], fmt.Sprint(i))
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release on screening %d: %v", i, err)
		}
	}
	if len(masters) != len(addrs) {
		t.Fatalf("12 screenings used %d of %d masters: %v", len(masters), len(addrs), masters)
	}
	t.Logf("screenings per master: %v", masters)
}

func keySlot(t *testing.T, c *redis.ClusterClient, key string) int64 {
	t.Helper()
	slot, err := c.ClusterKeySlot(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return slot
}

// pipelineSizes records the length of the longest pipeline of scripts a
// client sent.
type pipelineSizes struct {
	mu      sync.Mutex
	largest int
}

func (h *pipelineSizes) longest() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.largest
}

func (h *pipelineSizes) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() == "evalsha" {
			h.mu.Lock()
			h.largest = max(h.largest, len(cmds))
			h.mu.Unlock()
		}
		return next(ctx, cmds)
	}
}

// TestExclusionThroughBatchesOnCluster runs many goroutines on one locker
// over seats of screenings that live on different masters: their scripts
// share pipelines, which the cluster client splits by master. A reply
// routed to the wrong caller would let two goroutines into one seat.
func TestExclusionThroughBatchesOnCluster(t *testing.T) {
	addrs := startCluster(t)
	client := newClusterClient(t, addrs)
	sizes := &pipelineSizes{}
	client.AddHook(sizes)
	locker := distlock.NewRedis(client, distlock.RedisOptions{TTL: testTTL, Prefix: "cluster-test:" + uuid.NewString()[:8] + ":"})
	t.Cleanup(func() { _ = locker.Close() })

	seats := make([]string, 12) // 12 screenings: every master has some
	for i := range seats {
		seats[i] = fmt.Sprintf("{screening-%d}:A1", i)
	}
	distlocktest.ExclusionOnKeys(t, locker, seats, 2, 30, true)
	if n := sizes.longest(); n < 2 {
		t.Fatalf("the largest pipeline of scripts had %d commands: nothing was batched, so this test proved nothing", n)
	}
}
