package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/redlock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

const testTTL = time.Second

// testOptions are the options of the lockers under test. NodeTimeout is
// raised from its default (50ms at this TTL): a 2-core CI machine running
// the race detector stalls a live node's reply for 100ms now and then,
// which would count the node as failed.
func testOptions() redlock.Options {
	return redlock.Options{TTL: testTTL, NodeTimeout: 200 * time.Millisecond, Fencing: true}
}

// newLocker returns a Locker with clients of its own on servers, as
// another process would have.
func newLocker(t testing.TB, servers []*server, opts redlock.Options) *redlock.Locker {
	t.Helper()
	l := redlock.New(clients(t, servers), opts)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestConformance(t *testing.T) {
	servers := startServers(t, 3)
	// Every subtest of the suite uses keys of its own, so the lockers can
	// share the servers and the default prefix.
	locker := func(renewEvery time.Duration) func(t *testing.T) distlock.Locker {
		return func(t *testing.T) distlock.Locker {
			return newLocker(t, servers, withRenewEvery(testOptions(), renewEvery))
		}
	}
	distlocktest.Run(t, locker(0), distlocktest.Options{
		TTL:            testTTL,
		Fencing:        true, // the nodes keep their data for the whole test
		NewNonRenewing: locker(-1),
		Expire: func(t *testing.T, key string) {
			// As if the lease had run out: on every node.
			lockKey := newLocker(t, servers, redlock.Options{}).LockKeyForTest(key)
			for _, s := range servers {
				if n, err := s.client(t).Del(t.Context(), lockKey).Result(); err != nil || n != 1 {
					t.Fatalf("delete %s on %s = %d, %v; want 1, nil", lockKey, s.Addr, n, err)
				}
			}
		},
	})
}

// TestMinorityDown stops a minority of the nodes while locks are taken and
// held: exclusion holds, a held lock survives, and locks are still taken
// after the stop.
func TestMinorityDown(t *testing.T) {
	for _, tc := range []struct{ nodes, stop int }{{3, 1}, {5, 2}} {
		t.Run(fmt.Sprintf("%d_of_%d", tc.stop, tc.nodes), func(t *testing.T) {
			servers := startServers(t, tc.nodes)
			opts := testOptions()
			key := "{screening-" + uuid.NewString()[:8] + "}:A1"
			longKey := "{screening-" + uuid.NewString()[:8] + "}:B1"

			// The lock held across the stop has a lease and a node timeout
			// of its own, long enough that its renewals on a bare quorum
			// of a loaded machine's nodes come in time: what is tested is
			// that they go to the nodes left, not how fast they answer.
			longOpts := testOptions()
			longOpts.TTL, longOpts.NodeTimeout = 3*time.Second, time.Second
			long, err := newLocker(t, servers, longOpts).Obtain(t.Context(), longKey)
			if err != nil {
				t.Fatalf("Obtain(%q): %v", longKey, err)
			}

			const lockers, perLocker, rounds = 2, 2, 15
			sections := lockers * perLocker * rounds
			var (
				done, after atomic.Int32 // sections done; sections begun after the stop
				stopped     atomic.Bool
				stoppedAt   atomic.Int64 // Unix nanoseconds
				inside      atomic.Int32
				overlaps    atomic.Int32
				stale       atomic.Int32
				counter     atomic.Int64 // read and written back inside the section
				lastTok     atomic.Int64
				errs        = make(chan error, lockers*perLocker)
				wg          sync.WaitGroup
			)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for range lockers {
				l := newLocker(t, servers, opts)
				for range perLocker {
					wg.Go(func() {
						for range rounds {
							lock, err := l.Obtain(ctx, key)
							if err != nil {
								errs <- fmt.Errorf("Obtain: %w", err)
								return
							}
							stoppedBefore := stopped.Load()
							if stoppedBefore {
								after.Add(1)
							}
							if inside.Add(1) != 1 {
								overlaps.Add(1)
							}
							if tok := lock.Token(key); tok <= lastTok.Load() {
								stale.Add(1)
							} else {
								lastTok.Store(tok)
							}
							c := counter.Load()
							time.Sleep(time.Millisecond) // a section long enough for an overlap to be seen
							counter.Store(c + 1)
							inside.Add(-1)
							if err := lock.Release(ctx); err != nil {
								// A lock granted by just a quorum that
								// included the nodes stopped while it was
								// held is left on less than a quorum:
								// Release can only say so. Any other
								// failure is one.
								if stoppedBefore || !stopped.Load() || !errors.Is(err, redlock.ErrUnavailable) {
									errs <- fmt.Errorf("Release: %w", err)
									return
								}
							}
							if done.Add(1) == int32(sections/3) {
								for _, s := range servers[:tc.stop] {
									s.stop()
								}
								stoppedAt.Store(time.Now().UnixNano())
								stopped.Store(true)
							}
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if overlaps.Load() != 0 || counter.Load() != int64(sections) || stale.Load() != 0 {
				t.Errorf("exclusion broken: %d overlapping sections, counter %d after %d sections, %d stale fencing tokens",
					overlaps.Load(), counter.Load(), sections, stale.Load())
			}
			if !stopped.Load() || after.Load() == 0 {
				t.Errorf("no lock taken after %d of %d nodes stopped", tc.stop, tc.nodes)
			}

			// The lock held across the stop was renewed on the remaining
			// quorum: the time under test is longer than its lease.
			time.Sleep(time.Until(time.Unix(0, stoppedAt.Load()).Add(longOpts.TTL * 3 / 2)))
			if err := long.Err(); err != nil {
				t.Errorf("lock held across the stop: Err = %v, want nil", err)
			}
			if err := long.Refresh(t.Context()); err != nil {
				t.Errorf("lock held across the stop: Refresh = %v", err)
			}
			if err := long.Release(t.Context()); err != nil {
				t.Errorf("lock held across the stop: Release = %v", err)
			}
		})
	}
}

// TestMajorityDown stops a majority of the nodes: Obtain fails with
// ErrUnavailable long before its context ends, and a held lock is reported
// lost.
func TestMajorityDown(t *testing.T) {
	servers := startServers(t, 3)
	locker := newLocker(t, servers, testOptions())
	held, err := locker.Obtain(t.Context(), "{majority}:held-"+uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	servers[0].stop()
	servers[1].stop()

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = locker.Obtain(ctx, "{majority}:new-"+uuid.NewString())
	if !errors.Is(err, redlock.ErrUnavailable) || errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("Obtain with 2 of 3 nodes down = %v, want ErrUnavailable and not ErrNotAcquired", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Obtain waited until its context ended")
	}
	if _, err := locker.TryObtain(t.Context(), "{majority}:try"); !errors.Is(err, redlock.ErrUnavailable) {
		t.Fatalf("TryObtain with 2 of 3 nodes down = %v, want ErrUnavailable", err)
	}

	select {
	case <-held.Lost():
	case <-time.After(5 * testTTL):
		t.Fatal("held lock not reported lost within 5 TTL of losing its majority")
	}
	if err := held.Err(); !errors.Is(err, distlock.ErrLost) {
		t.Fatalf("Err after Lost = %v, want ErrLost", err)
	}
	if err := held.Release(t.Context()); !errors.Is(err, redlock.ErrUnavailable) {
		t.Fatalf("Release with 2 of 3 nodes down = %v, want ErrUnavailable", err)
	}
}

// TestStopMarginIsLeftOnTheNodes cuts a holder off from two of three
// nodes (proxies in between are stopped) and compares the moment the
// holder declares its lock lost with the moment a rival could first win a
// quorum, when the second of the three nodes lets the key expire:
// StopMargin must lie between them, for the holder to stop before anybody
// else can win. Without the margin only the drift allowance (TTL/100 +
// 2ms) does. (Not every node need keep the margin: one that missed the
// last renewal expires sooner, and a rival needs a second.)
//
// Both moments are read as the code fixes them, not when the test gets
// to look, which a busy machine can delay past the margin: the loss's
// from the lock, the expiries from each node's own clock right after the
// cut, when no renewal can reach the cut nodes any more (the third node's
// is renewed on, so what is read of it is early, never late). The lease is
// long enough for those reads to come before the expiries.
func TestStopMarginIsLeftOnTheNodes(t *testing.T) {
	const ttl, margin, key = 3 * time.Second, 1200 * time.Millisecond, "{screening-42}:C7"
	servers := startServers(t, 3)
	direct := clients(t, servers)
	holderClients := clients(t, servers)
	cut := make([]*toxiproxy.Proxy, 2)
	for i := range cut {
		cut[i] = testenv.StartProxy(t, fmt.Sprintf("node-%d", i), servers[i].Addr)
		holderClients[i] = nodeClient(t, cut[i].Listen)
	}
	opts := testOptions()
	opts.TTL, opts.StopMargin = ttl, margin
	locker := redlock.New(holderClients, opts)
	t.Cleanup(func() { _ = locker.Close() })

	lock, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cut {
		p.Stop()
	}
	expires := make([]time.Time, len(direct))
	for i, c := range direct {
		expires[i] = testenv.ExpiresAt(t, c.(*redis.Client), locker.LockKeyForTest(key))
	}
	slices.SortFunc(expires, time.Time.Compare)
	wait.Recv(t, lock.Lost(), 5*ttl, "a holder cut off from a majority declares its lock lost")
	left := expires[len(expires)/2].Sub(redlock.DeadlineForTest(lock))
	t.Logf("declared lost %v before a quorum of nodes lets the key expire", left)
	if left < margin {
		t.Errorf("the lock is declared lost %v before a quorum of nodes lets its key expire; want at least the %v margin", left, margin)
	}
}

// TestFencingAcrossDivergentCounters shows why Obtain raises the fence
// counters of the granting nodes: counters of the nodes drift apart (here
// node 0's is far ahead, of its clock too), and once that node is gone,
// the next quorum must still issue a higher token.
func TestFencingAcrossDivergentCounters(t *testing.T) {
	servers := startServers(t, 3)
	locker := newLocker(t, servers, testOptions())
	key := "{fence}:" + uuid.NewString()
	ahead := time.Now().Add(24 * time.Hour).UnixMicro()
	if err := servers[0].client(t).Set(t.Context(), locker.FenceKeyForTest(key), ahead, 0).Err(); err != nil {
		t.Fatal(err)
	}

	first, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := first.Token(key); got != ahead+1 {
		t.Fatalf("first token = %d, want %d (node 0's counter was %d)", got, ahead+1, ahead)
	}
	if err := first.Release(t.Context()); err != nil {
		t.Fatal(err)
	}

	servers[0].stop()
	second, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release(t.Context())
	if got := second.Token(key); got <= ahead+1 {
		t.Fatalf("token after node 0 stopped = %d, want above %d", got, ahead+1)
	}
}

// TestFencingSurvivesDataLoss: every node loses its data (restarted
// without persistence), and the next token is still above the last one
// issued before, because a token is at least the node's clock.
func TestFencingSurvivesDataLoss(t *testing.T) {
	servers := startServers(t, 3)
	locker := newLocker(t, servers, testOptions())
	key := "{fence}:" + uuid.NewString()
	var last int64
	for range 3 {
		lock, err := locker.Obtain(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		last = lock.Token(key)
		if err := lock.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range servers {
		if err := s.client(t).FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lock, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	if got := lock.Token(key); got <= last {
		t.Fatalf("token after every node lost its data = %d, want above %d", got, last)
	}
}

// TestFencingRoundTrips checks that Obtain sends the raise script only
// when the granting nodes disagree on a counter: counted as the scripts
// each node ran (INFO commandstats) during one Obtain.
func TestFencingRoundTrips(t *testing.T) {
	servers := startServers(t, 3)
	locker := newLocker(t, servers, testOptions())
	for _, tc := range []struct {
		name      string
		node0     int64 // node 0's counter before the Obtain; the others' are 0
		want      int64 // scripts run on node 0: acquire, and raise if needed
		behaviour string
	}{
		{"agreeing counters", 0, 1, "no raise"},
		{"node 0 ahead", time.Now().Add(24 * time.Hour).UnixMicro(), 2, "raise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "{rounds}:" + uuid.NewString()
			// The first Obtain loads the scripts (NOSCRIPT, then EVAL).
			warm, err := locker.Obtain(t.Context(), "{rounds}:warm-"+uuid.NewString())
			if err != nil {
				t.Fatal(err)
			}
			if err := warm.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			node0 := servers[0].client(t)
			if err := node0.Set(t.Context(), locker.FenceKeyForTest(key), tc.node0, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := node0.ConfigResetStat(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			before := time.Now().UnixMicro()
			lock, err := locker.Obtain(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			scripts := evalshaCalls(t, node0)
			if err := lock.Release(t.Context()); err != nil {
				t.Fatal(err)
			}
			switch got := lock.Token(key); {
			case tc.node0 != 0 && got != tc.node0+1:
				t.Errorf("token = %d, want %d (node 0's counter plus one)", got, tc.node0+1)
			case tc.node0 == 0 && (got < before || got > time.Now().UnixMicro()):
				t.Errorf("token = %d, want the clock of the attempt (between %d and now)", got, before)
			}
			if scripts != tc.want {
				t.Errorf("Obtain ran %d scripts on node 0, want %d (%s)", scripts, tc.want, tc.behaviour)
			}
		})
	}
}

// evalshaCalls returns how many EVALSHA commands the server behind c ran
// since its statistics were reset.
func evalshaCalls(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(info) {
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls=")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 0
}

// TestTokenWithoutFencing checks that a Locker without Fencing issues no
// tokens.
func TestTokenWithoutFencing(t *testing.T) {
	servers := startServers(t, 3)
	key := "{nofence}:" + uuid.NewString()
	lock, err := newLocker(t, servers, redlock.Options{TTL: testTTL, NodeTimeout: 200 * time.Millisecond}).Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release(t.Context())
	if got := lock.Token(key); got != 0 {
		t.Fatalf("Token without Fencing = %d, want 0", got)
	}
}

func withRenewEvery(opts redlock.Options, every time.Duration) redlock.Options {
	opts.RenewEvery = every
	return opts
}

// TestReleaseWakesWaiter checks that a waiting Obtain is woken by the
// nodes' release notifications rather than by its backoff: with a backoff
// and a lease of a minute (the backoff never outlasts the lease left), a
// waiter that only polled would still be asleep when its context ends.
func TestReleaseWakesWaiter(t *testing.T) {
	servers := startServers(t, 3)
	opts := testOptions()
	opts.TTL, opts.MinBackoff, opts.MaxBackoff = time.Minute, time.Minute, time.Minute
	key := "{wake}:" + uuid.NewString()
	distlocktest.ReleaseWakesWaiter(t, newLocker(t, servers, opts), newLocker(t, servers, opts), []string{key}, []string{key})
}

// TestNodeAllOrNothing checks that a node on which one of the keys is held
// takes none of them, even when the lock is won on the other nodes: the
// acquire script gives back the keys it took before the held one.
func TestNodeAllOrNothing(t *testing.T) {
	servers := startServers(t, 3)
	locker := newLocker(t, servers, testOptions())
	free, held := "{node}:A-"+uuid.NewString(), "{node}:B-"+uuid.NewString()
	node0 := servers[0].client(t)
	if err := node0.Set(t.Context(), locker.LockKeyForTest(held), "another owner", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	lock, err := locker.TryObtain(t.Context(), free, held)
	if err != nil {
		t.Fatalf("TryObtain with the keys free on 2 of 3 nodes: %v", err)
	}
	defer lock.Release(t.Context())
	if n, err := node0.Exists(t.Context(), locker.LockKeyForTest(free)).Result(); err != nil || n != 0 {
		t.Fatalf("node 0, where %q is held, has %q taken: EXISTS = %d, %v; want 0", held, free, n, err)
	}
}

// TestTopUp checks that a lock won on a bare quorum is taken on the node
// that refused it as soon as that node's key is gone, before Obtain
// returns, so that the lock survives one more node failure: node 2 holds
// the key for another owner for 50ms, as the previous holder or a rival
// of a split vote would for a moment. Obtain tries again for as long as
// one NodeTimeout, here a second, so that a busy machine still gets to
// try after those 50ms.
func TestTopUp(t *testing.T) {
	servers := startServers(t, 3)
	opts := testOptions()
	opts.TTL, opts.NodeTimeout = 5*time.Second, time.Second
	locker := newLocker(t, servers, opts)
	key := "{topup}:" + uuid.NewString()
	lockKey := locker.LockKeyForTest(key)
	node0, node2 := servers[0].client(t), servers[2].client(t)
	if err := node2.Set(t.Context(), lockKey, "another owner", 50*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	lock, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatalf("Obtain with the key free on 2 of 3 nodes: %v", err)
	}
	defer lock.Release(t.Context())
	want, err := node0.Get(t.Context(), lockKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := node2.Get(t.Context(), lockKey).Result(); err != nil || got != want {
		t.Fatalf("node 2 after Obtain: GET %s = %q, %v; want the owner token %q of nodes 0 and 1", lockKey, got, err, want)
	}
}

// TestRaiseFences: every node loses its data and the clients' clock is an
// hour behind, so the next token is an hour older than the last one the
// resource saw; RaiseFences past that token, on a bare quorum, makes the
// next one newer. Without a quorum it reports the nodes unavailable.
func TestRaiseFences(t *testing.T) {
	servers := startServers(t, 3)
	key := "{fence}:" + uuid.NewString()
	lock, err := newLocker(t, servers, testOptions()).Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	written := lock.Token(key) // what the resource saw last
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if err := s.client(t).FlushAll(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	behind := testOptions()
	behind.FenceClock = func() time.Time { return time.Now().Add(-time.Hour) }
	locker := newLocker(t, servers, behind)
	token := func() int64 {
		t.Helper()
		lock, err := locker.Obtain(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release(t.Context())
		return lock.Token(key)
	}
	if got := token(); got >= written {
		t.Fatalf("token after the data loss, an hour behind = %d, want below %d: the fault is not in effect", got, written)
	}

	servers[2].stop()
	if err := locker.RaiseFences(t.Context(), map[string]int64{key: written}); err != nil {
		t.Fatalf("RaiseFences with a quorum up: %v", err)
	}
	if got := token(); got <= written {
		t.Errorf("token after RaiseFences(%d) = %d, want above it", written, got)
	}
	servers[1].stop()
	if err := locker.RaiseFences(t.Context(), map[string]int64{key: written}); !errors.Is(err, redlock.ErrUnavailable) {
		t.Errorf("RaiseFences with one node of three up: %v, want ErrUnavailable", err)
	}
}
