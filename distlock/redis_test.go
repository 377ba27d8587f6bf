package distlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// newClient returns a client of its own on the test Redis, closed when t
// ends.
func newClient(t testing.TB) *redis.Client {
	t.Helper()
	return testenv.RedisClient(t, testenv.RedisURL(t))
}

// testPrefix returns a key prefix of t's own, so that tests and packages
// running at once on one Redis never share a key. Its keys are deleted
// when t ends.
func testPrefix(t testing.TB) string {
	t.Helper()
	prefix := "distlock-test:" + uuid.NewString() + ":"
	c := newClient(t)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return prefix
}

// newRedis returns a Redis locker with a client of its own, closed when t
// ends.
func newRedis(t testing.TB, c redis.UniversalClient, opts distlock.RedisOptions) *distlock.Redis {
	t.Helper()
	r := distlock.NewRedis(c, opts)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// obtainHeld obtains key from r, failing t if it cannot, and releases it
// when t ends.
func obtainHeld(t *testing.T, r *distlock.Redis, key string) distlock.Lock {
	t.Helper()
	lock, err := r.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
	return lock
}

func TestRedisConformance(t *testing.T) {
	const ttl = time.Second
	// Every subtest gets one prefix, shared by all the lockers it makes.
	var mu sync.Mutex
	prefixes := map[string]string{}
	prefixOf := func(t *testing.T) string {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := prefixes[t.Name()]; ok {
			return p
		}
		p := testPrefix(t)
		prefixes[t.Name()] = p
		return p
	}
	locker := func(renewEvery time.Duration) func(t *testing.T) distlock.Locker {
		return func(t *testing.T) distlock.Locker {
			opts := distlock.RedisOptions{TTL: ttl, RenewEvery: renewEvery, Prefix: prefixOf(t)}
			return newRedis(t, newClient(t), opts)
		}
	}
	distlocktest.Run(t, locker(0), distlocktest.Options{
		TTL:            ttl,
		Fencing:        true,
		NewNonRenewing: locker(-1),
		Expire: func(t *testing.T, key string) {
			c := newClient(t)
			lockKey := distlock.NewRedis(c, distlock.RedisOptions{Prefix: prefixOf(t)}).LockKeyForTest(key)
			if n, err := c.Del(t.Context(), lockKey).Result(); err != nil || n != 1 {
				t.Fatalf("delete %s = %d, %v; want 1, nil", lockKey, n, err)
			}
		},
	})
}

// loggedClient returns a client of its own on the test Redis, and the log
// of the commands it sends.
func loggedClient(t *testing.T) (*redis.Client, *commandLog) {
	t.Helper()
	c, log := newClient(t), &commandLog{}
	c.AddHook(log)
	return c, log
}

// commandLog is a go-redis hook that records the name of every command a
// client sends, once it is answered.
type commandLog struct {
	mu        sync.Mutex
	names     []string
	pipelines [][]string // the names of each pipeline's commands
}

func (h *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.mu.Lock()
		h.names = append(h.names, cmd.Name())
		h.mu.Unlock()
		return err
	}
}

func (h *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.mu.Lock()
		var names []string
		for _, cmd := range cmds {
			names = append(names, cmd.Name())
		}
		h.names = append(h.names, names...)
		h.pipelines = append(h.pipelines, names)
		h.mu.Unlock()
		return err
	}
}

// take returns the commands recorded since the last take.
func (h *commandLog) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	names := h.names
	h.names = nil
	return names
}

// largestPipeline returns the length of the longest pipeline that began
// with a command called name.
func (h *commandLog) largestPipeline(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	largest := 0
	for _, p := range h.pipelines {
		if p[0] == name {
			largest = max(largest, len(p))
		}
	}
	return largest
}

// scripts returns how many scripts were answered, by EVALSHA or EVAL.
func (h *commandLog) scripts() int { return h.count("evalsha") + h.count("eval") }

func (h *commandLog) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.names {
		if c == name {
			n++
		}
	}
	return n
}

func TestRedisOneRoundTripPerOperation(t *testing.T) {
	c, log := loggedClient(t)
	r := newRedis(t, c, distlock.RedisOptions{Prefix: testPrefix(t)}) // TTL 10s: no renewal during the test
	ctx := t.Context()

	// Warm up: the first run of a script on a server may cost a NOSCRIPT
	// reply and an EVAL.
	lock, err := r.Obtain(ctx, "{s}:warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("warm-up commands: %q", log.take())

	check := func(what string, want int) {
		t.Helper()
		if got := log.take(); len(got) != want || (want == 1 && got[0] != "evalsha") {
			t.Errorf("%s sent %q, want %d EVALSHA", what, got, want)
		}
	}
	lock, err = r.Obtain(ctx, "{s}:A1", "{s}:A2", "{s}:A3")
	if err != nil {
		t.Fatal(err)
	}
	check("Obtain of 3 keys", 1)
	if _, err := r.TryObtain(ctx, "{s}:A2"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain of a held key = %v, want ErrNotAcquired", err)
	}
	check("TryObtain of a held key", 1)
	if err := lock.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("Refresh", 1)
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	check("Release", 1)
}

func TestRedisHandoffWakesByPush(t *testing.T) {
	prefix := testPrefix(t)
	ctx := t.Context()
	holder := newRedis(t, newClient(t), distlock.RedisOptions{TTL: time.Minute, Prefix: prefix})
	waiterClient, log := loggedClient(t)
	waiter := newRedis(t, waiterClient, distlock.RedisOptions{Prefix: prefix, MinBackoff: pollForever, MaxBackoff: pollForever})

	const key = "{screening-1}:C7"
	held, err := holder.Obtain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		lock, err := waiter.Obtain(ctx, key)
		if err != nil {
			t.Errorf("waiter: %v", err)
			close(got)
			return
		}
		got <- time.Now()
		_ = lock.Release(context.Background())
	}()

	// The waiter tries once, subscribes, and tries again; once that
	// second try is answered, only a push or its poll, half a minute
	// away at the soonest, can wake it.
	wait.For(t, 10*time.Second, "the waiter's second attempt is answered", func() bool { return log.scripts() >= 2 })
	released := time.Now()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if at := wait.Recv(t, got, pollForever/3, "the waiter, woken by the release rather than its poll"); !at.IsZero() {
		t.Logf("handoff took %v", at.Sub(released))
	}
}

func TestRedisWaitersShareOneSubscription(t *testing.T) {
	prefix := testPrefix(t)
	ctx := t.Context()
	// Leases of a minute: a waiter polls no later than the holder's lease
	// ends, and none may end within the test.
	holder := newRedis(t, newClient(t), distlock.RedisOptions{TTL: time.Minute, Prefix: prefix})
	waitersClient, log := loggedClient(t)
	waiters := newRedis(t, waitersClient, distlock.RedisOptions{TTL: time.Minute, Prefix: prefix, MinBackoff: pollForever, MaxBackoff: pollForever})
	admin := newClient(t)
	const key = "{screening-1}:C8"
	channel := waiters.ChannelForTest(key)
	subscribers := func() int64 {
		n, err := admin.PubSubNumSub(ctx, channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[channel]
	}

	held, err := holder.Obtain(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	var wg sync.WaitGroup
	var done atomic.Int32
	for range n {
		wg.Go(func() {
			lock, err := waiters.Obtain(ctx, key)
			if err != nil {
				t.Errorf("waiter: %v", err)
				return
			}
			done.Add(1)
			if err := lock.Release(ctx); err != nil {
				t.Errorf("waiter's Release: %v", err)
			}
		})
	}
	// Each waiter tries, subscribes, and tries again: once every second
	// try is answered, every waiter is subscribed.
	wait.For(t, 10*time.Second, "every waiter's second attempt is answered", func() bool { return log.scripts() >= 2*n })
	if got := subscribers(); got != 1 {
		t.Fatalf("%d subscriptions to %s for %d waiters of one locker, want 1", got, channel, n)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Each waiter hands the key to the next by its release: pushes only,
	// or the last would wait half a minute at least for its poll.
	returned := make(chan struct{})
	go func() { wg.Wait(); close(returned) }()
	wait.Recv(t, returned, pollForever/3, "every waiter, woken by a release rather than its poll")
	if got := done.Load(); got != n {
		t.Fatalf("%d of %d waiters got the key", got, n)
	}
	wait.For(t, 10*time.Second, "no subscription is left once every waiter returned", func() bool { return subscribers() == 0 })
}

// failingRefresh is a go-redis hook that fails the refresh script while on.
type failingRefresh struct {
	on    atomic.Bool
	fails atomic.Int32
}

var errInjected = errors.New("injected network error")

func (h *failingRefresh) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failingRefresh) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *failingRefresh) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if h.on.Load() && cmd.Name() == "evalsha" && len(args) > 1 && args[1] == distlock.RefreshScriptHashForTest() {
			h.fails.Add(1)
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func TestRedisRenewalFailures(t *testing.T) {
	// A lease of ten renewal periods: renewals that a busy machine runs
	// late still come within it.
	const ttl, every = 2 * time.Second, 200 * time.Millisecond
	c := newClient(t)
	hook := &failingRefresh{}
	c.AddHook(hook)
	r := newRedis(t, c, distlock.RedisOptions{TTL: ttl, RenewEvery: every, Prefix: testPrefix(t)})
	lock := obtainHeld(t, r, "{s}:C9")

	// A few failed renewals within the lease are no loss, even once the
	// lease they could not extend has passed.
	hook.on.Store(true)
	wait.For(t, 10*time.Second, "two renewals fail", func() bool { return hook.fails.Load() >= 2 })
	hook.on.Store(false)
	time.Sleep(ttl + every) // the time under test: more than a lease after the failures
	select {
	case <-lock.Lost():
		t.Fatalf("lost after transient renewal failures: %v", lock.Err())
	default:
	}

	// Renewals failing until the lease runs out are a loss, declared at
	// the lease's deadline and not before.
	hook.on.Store(true)
	start := time.Now()
	select {
	case <-lock.Lost():
	case <-time.After(5 * ttl):
		t.Fatal("not lost 5 TTLs after renewals started failing")
	}
	if took := time.Since(start); took < ttl-every-every/2 {
		t.Fatalf("lost %v after renewals started failing, before the lease could have run out", took)
	}
	if err := lock.Err(); !errors.Is(err, distlock.ErrLost) || !errors.Is(err, errInjected) {
		t.Fatalf("Err = %v, want ErrLost wrapping the renewal error", err)
	}
}

func TestRedisBackendErrorIsNotNotAcquired(t *testing.T) {
	// Nothing listens on port 1: every command fails at once.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	r := newRedis(t, c, distlock.RedisOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	_, err := r.Obtain(ctx, "{s}:C1")
	if err == nil || errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("Obtain on a dead server = %v, want a connection error that is not ErrNotAcquired", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Obtain on a dead server waited out its context")
	}
	if _, err := r.TryObtain(ctx, "{s}:C1"); err == nil || errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain on a dead server = %v, want a connection error", err)
	}
	t.Logf("error: %v", err)
}

// TestRedisExclusionThroughBatches runs many goroutines on one locker, so
// that their scripts travel in shared pipelines: a reply delivered to the
// wrong caller would let two goroutines into one key.
func TestRedisExclusionThroughBatches(t *testing.T) {
	c, log := loggedClient(t)
	r := newRedis(t, c, distlock.RedisOptions{Prefix: testPrefix(t)})
	distlocktest.ExclusionOnKeys(t, r, []string{"{s}:C1", "{s}:C2", "{s}:C3", "{s}:C4"}, 8, 40, true)
	if n := log.largestPipeline("evalsha"); n < 2 {
		t.Fatalf("the largest pipeline of scripts had %d commands: nothing was batched, so this test proved nothing", n)
	}
}

// takeInTurn obtains and releases key n times, one after the other,
// checks that each token is above the one before, and returns the last.
func takeInTurn(t *testing.T, locker *distlock.Redis, key string, n int) int64 {
	t.Helper()
	ctx := t.Context()
	var last int64
	for range n {
		lock, err := locker.Obtain(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if tok := lock.Token(key); tok <= last {
			t.Fatalf("token %d after %d: want increasing", tok, last)
		}
		last = lock.Token(key)
		if err := lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// A Redis that loses its data (restarted without persistence, or replaced
// by a replica that never saw the last writes) has lost the fence counters
// too. The tokens it issues next must still be above every token it issued
// before: else every fenced write of those keys is refused as stale until
// the counters catch up, and two holders across the loss can carry one
// token.
func TestRedisFencingSurvivesDataLoss(t *testing.T) {
	server := testenv.StartRedisServer(t, nil)
	c := redis.NewClient(&redis.Options{Addr: server.Addr})
	t.Cleanup(func() { _ = c.Close() })
	locker := newRedis(t, c, distlock.RedisOptions{TTL: time.Second, RenewEvery: -1})
	ctx := t.Context()
	const key = "{screening-42}:C7"

	last := takeInTurn(t, locker, key, 3)
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if tok := obtainHeld(t, locker, key).Token(key); tok <= last {
		t.Fatalf("token after the data was lost %d, want above %d, the last token issued before", tok, last)
	}
}

// TestRedisStopMarginIsLeftOnTheServer cuts a holder off from its Redis
// server (a proxy in between is stopped) and compares the moment the
// holder declares its lock lost with the moment the key expires on the
// server: StopMargin must lie between them, so that the holder has that
// long to stop before anybody else can take the key. Without the margin
// only the drift allowance (TTL/100 + 2ms) does.
//
// Both moments are read as the code fixes them, not when the test gets
// to look, which a busy machine can delay past the margin: the loss's
// from the lock, the expiry from the server's own clock right after the
// cut, when no renewal can reach it any more. The lease is long enough for
// that read to come before the expiry.
func TestRedisStopMarginIsLeftOnTheServer(t *testing.T) {
	const ttl, margin, key = 3 * time.Second, 1200 * time.Millisecond, "{screening-42}:C7"
	server := testenv.StartRedisServer(t, nil)
	direct := redis.NewClient(&redis.Options{Addr: server.Addr})
	t.Cleanup(func() { _ = direct.Close() })
	link := testenv.StartProxy(t, "redis", server.Addr)
	holder := redis.NewClient(&redis.Options{Addr: link.Listen, MaxRetries: -1})
	t.Cleanup(func() { _ = holder.Close() })
	locker := newRedis(t, holder, distlock.RedisOptions{TTL: ttl, StopMargin: margin})

	lock, err := locker.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	link.Stop()
	expires := testenv.ExpiresAt(t, direct, locker.LockKeyForTest(key))
	wait.Recv(t, lock.Lost(), 5*ttl, "a holder cut off from Redis declares its lock lost")
	left := expires.Sub(distlock.DeadlineForTest(lock))
	t.Logf("declared lost %v before the key expires on the server", left)
	if left < margin {
		t.Errorf("the lock is declared lost %v before its key expires on the server; want at least the %v margin", left, margin)
	}
}

// TestRedisFenceCounterExpires checks both halves of an expiring fence
// counter: it does expire (every token sets its expiry again), and the
// token after it expired is newer than every token it gave, however fast
// they came. The counter is driven as far ahead as one client can take a
// key, which is where a counter could get ahead of the server's clock;
// then it is left to expire on its own.
func TestRedisFenceCounterExpires(t *testing.T) {
	c := newClient(t)
	const fenceTTL = time.Second
	locker := newRedis(t, c, distlock.RedisOptions{TTL: time.Second, RenewEvery: -1, FenceTTL: fenceTTL, Prefix: testPrefix(t)})
	ctx := t.Context()
	const key = "{screening-42}:C7"
	counter := locker.FenceKeyForTest(key)

	last := takeInTurn(t, locker, key, 500)
	checkFenceExpiry(t, c, counter, fenceTTL)
	wait.For(t, 5*fenceTTL, "the fence counter to expire", func() bool {
		return c.Exists(ctx, counter).Val() == 0
	})
	if tok := obtainHeld(t, locker, key).Token(key); tok <= last {
		t.Fatalf("token after the counter expired %d, want above %d, the last token it gave", tok, last)
	}
}

// checkFenceExpiry checks that the fence counter counter expires, and
// within fenceTTL: every token it gives, and every raise, sets its expiry
// again.
func checkFenceExpiry(t *testing.T, c *redis.Client, counter string, fenceTTL time.Duration) {
	t.Helper()
	ttl, err := c.PTTL(t.Context(), counter).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > fenceTTL {
		t.Fatalf("the fence counter %s expires in %v (negative: never), want within (0, %v]", counter, ttl, fenceTTL)
	}
}

// TestRedisRaiseFences checks that RaiseFences makes the next token of a
// key newer than the fence it is given, when the counter is behind it or
// gone (as after a loss of the data with the server's clock behind the
// tokens it gave before), and never makes one older: a counter ahead of
// the fence is left alone. A raised counter expires like any other.
func TestRedisRaiseFences(t *testing.T) {
	c := newClient(t)
	const fenceTTL = time.Hour
	locker := newRedis(t, c, distlock.RedisOptions{TTL: time.Second, RenewEvery: -1, FenceTTL: fenceTTL, Prefix: testPrefix(t)})
	ctx := t.Context()
	const key, other = "{screening-42}:C7", "{screening-42}:C8"
	// An hour ahead of the server's clock: the fence a seat keeps from
	// before a restart whose clock came back an hour behind.
	ahead := takeInTurn(t, locker, key, 1) + time.Hour.Microseconds()

	t.Run("a counter behind the fence, or gone, is raised past it", func(t *testing.T) {
		if err := c.Del(ctx, locker.FenceKeyForTest(other)).Err(); err != nil {
			t.Fatal(err)
		}
		if err := locker.RaiseFences(ctx, map[string]int64{key: ahead, other: ahead + 7}); err != nil {
			t.Fatal(err)
		}
		// Before any token: a token sets the counter's expiry again.
		checkFenceExpiry(t, c, locker.FenceKeyForTest(other), fenceTTL)
		if tok := takeInTurn(t, locker, key, 1); tok <= ahead {
			t.Errorf("token after raising to %d: %d, want above it", ahead, tok)
		}
		if tok := takeInTurn(t, locker, other, 1); tok <= ahead+7 {
			t.Errorf("token of a key whose counter was gone, after raising to %d: %d, want above it", ahead+7, tok)
		}
	})
	t.Run("a counter ahead of the fence is left alone", func(t *testing.T) {
		last := takeInTurn(t, locker, key, 1)
		if err := locker.RaiseFences(ctx, map[string]int64{key: 5}); err != nil {
			t.Fatal(err)
		}
		if tok := takeInTurn(t, locker, key, 1); tok != last+1 {
			t.Errorf("token after raising to 5 a counter at %d: %d, want %d", last, tok, last+1)
		}
	})
}
