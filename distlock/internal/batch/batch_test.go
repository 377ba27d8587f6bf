package batch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// echo returns a script that replies with its first argument. Its source
// is new to the server (it names the test and the time), so the first
// EVALSHA of it gets NOSCRIPT.
func echo(t *testing.T) *redis.Script {
	return redis.NewScript(fmt.Sprintf("return ARGV[1] -- %s %d", t.Name(), time.Now().UnixNano()))
}

// batchHook watches a client's traffic: it records the size of every
// pipeline of scripts and the first argument of every script call in every
// round trip, can hold the first lone EVALSHA until told to go on (so that
// calls queue up behind it), and can fail every pipeline.
type batchHook struct {
	hold, held chan struct{} // nil: hold nothing
	holding    atomic.Bool   // set by the one call held; the others pass
	failWith   error         // if set, every pipeline of scripts fails with it
	stall      bool          // if set, every pipeline of scripts waits for its context to end (5s at most)

	// holdBatch and batchHeld, if not nil, do for the first pipeline of
	// scripts what hold and held do for the first lone call.
	holdBatch, batchHeld chan struct{}
	holdBatchOnce        sync.Once

	mu         sync.Mutex
	sizes      []int
	roundTrips [][]any // the first argument of every script call, per round trip
}

// record notes a round trip of script calls, a pipeline or a lone call.
func (h *batchHook) record(pipeline bool, cmds []redis.Cmder) {
	firstArgs := make([]any, len(cmds))
	for i, cmd := range cmds {
		if args := cmd.Args(); len(args) > 3 { // evalsha, sha, number of keys (0 here), first argument
			firstArgs[i] = args[3]
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roundTrips = append(h.roundTrips, firstArgs)
	if pipeline {
		h.sizes = append(h.sizes, len(cmds))
	}
}

func (h *batchHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *batchHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "evalsha" {
			return next(ctx, cmd)
		}
		h.record(false, []redis.Cmder{cmd})
		if h.hold != nil && h.holding.CompareAndSwap(false, true) {
			close(h.held)
			<-h.hold
		}
		return next(ctx, cmd)
	}
}

func (h *batchHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if cmds[0].Name() != "evalsha" {
			return next(ctx, cmds) // a new connection's handshake
		}
		h.record(true, cmds)
		if h.holdBatch != nil {
			h.holdBatchOnce.Do(func() { close(h.batchHeld); <-h.holdBatch })
		}
		if h.stall {
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			for _, cmd := range cmds {
				cmd.SetErr(context.Cause(ctx))
			}
			return context.Cause(ctx)
		}
		if h.failWith != nil {
			for _, cmd := range cmds {
				cmd.SetErr(h.failWith)
			}
			return h.failWith
		}
		return next(ctx, cmds)
	}
}

func (h *batchHook) largestPipeline() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	largest := 0
	for _, n := range h.sizes {
		largest = max(largest, n)
	}
	return largest
}

func newHookedBatcher(t *testing.T, h *batchHook) *Batcher {
	return newHookedBatcherTimeout(t, h, 0)
}

func newHookedBatcherTimeout(t *testing.T, h *batchHook, timeout time.Duration) *Batcher {
	t.Helper()
	c := testenv.RedisClient(t, testenv.RedisURL(t))
	c.AddHook(h)
	return New(c, timeout)
}

// queueBehindHeldCall starts a lone call that h holds on the wire, then
// one call per context in ctxs, in that order, and waits until they are
// all queued. It returns the replies of the queued calls, to be read once
// h.hold is closed, each reply in its caller's position.
func queueBehindHeldCall(t *testing.T, b *Batcher, h *batchHook, script *redis.Script, ctxs []context.Context) []chan *redis.Cmd {
	t.Helper()
	go b.Run(t.Context(), redis.NewScript("return 'first'"), nil)
	wait.Recv(t, h.held, 10*time.Second, "the first call held on the wire")
	replies := make([]chan *redis.Cmd, len(ctxs))
	for i, ctx := range ctxs {
		replies[i] = make(chan *redis.Cmd, 1)
		go func() { replies[i] <- b.Run(ctx, script, nil, fmt.Sprint("caller-", i)) }()
		wait.For(t, 10*time.Second, fmt.Sprintf("caller %d queued", i), func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.queue) == i+1
		})
	}
	return replies
}

// reply waits for the reply of caller i.
func reply(t *testing.T, replies []chan *redis.Cmd, i int) *redis.Cmd {
	t.Helper()
	return wait.Recv(t, replies[i], 10*time.Second, fmt.Sprintf("the reply of caller %d", i))
}

// checkEchoed checks that each of the callers, all of them when none are
// named, got the echo of its own argument: caller i's "caller-i".
func checkEchoed(t *testing.T, replies []chan *redis.Cmd, callers ...int) {
	t.Helper()
	if len(callers) == 0 {
		for i := range replies {
			callers = append(callers, i)
		}
	}
	for _, i := range callers {
		got, err := reply(t, replies, i).Text()
		if want := fmt.Sprint("caller-", i); err != nil || got != want {
			t.Errorf("caller %d: got %q, %v; want %q", i, got, err, want)
		}
	}
}

func TestBatchRepliesReachTheirCallers(t *testing.T) {
	h := &batchHook{}
	b := newHookedBatcher(t, h)
	script := echo(t)
	const goroutines, calls = 32, 200
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				want := fmt.Sprintf("%d/%d", g, i)
				got, err := b.Run(t.Context(), script, nil, want).Text()
				if err != nil || got != want {
					errs <- fmt.Errorf("goroutine %d, call %d: got %q, %v; want %q", g, i, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := h.largestPipeline(); n < 2 {
		t.Fatalf("the largest batch had %d calls: no batch formed, so this test proved nothing", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sending || len(b.queue) != 0 {
		t.Errorf("after the last reply: sending=%v, %d calls queued; want idle", b.sending, len(b.queue))
	}
}

// TestBatchSendsOneWavePerRoundTrip checks that callers who come straight
// back for another call, as goroutines locking and unlocking in a loop do,
// go out together, one wave per round trip, instead of splitting into two
// parts that take turns on the wire (see Batcher). Nothing in it is timed.
//
// It counts the round trips that leave a caller behind: a caller of one
// round trip, with calls still to make, that is missing from the next. A
// batcher that hands the queue on as soon as a batch is answered does that
// in most round trips (its sender, or half the wave, goes again before the
// others are back). This one waits until every caller of a batch has
// returned from Run (see leave), and with one P to run them, the
// goroutines it answers run in turn, each until it is queued again,
// before the next batch's sender runs: none is left behind unless the
// runtime preempts it in between (to start a garbage collection, or once
// the operating system has kept its thread off the CPU for 10ms). The
// test allows 10 of those. With more Ps, a sender on another P can take
// the queue while a caller is still on its way back, which costs that
// caller one round trip, not a split; so the test pins one P, to count
// splits only.
//
// It does not bound the round trips themselves: with one P, a goroutine
// sometimes makes its first hundred calls alone before the others make
// any, which is no split.
func TestBatchSendsOneWavePerRoundTrip(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const goroutines, calls = 16, 200
	// On a loaded machine the one P may run every goroutine's calls in
	// turn, so that no batch forms and the run proves nothing: it is run
	// again, a bounded number of times.
	var h *batchHook
	for try := 0; try < 10 && (h == nil || len(h.sizes) == 0); try++ {
		h = &batchHook{}
		runWaves(t, newHookedBatcher(t, h), goroutines, calls)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sizes) == 0 {
		t.Fatal("no batch formed in 10 runs, so this test proved nothing")
	}
	leftBehind := 0
	made := map[any]int{} // calls sent, by caller
	for i := 0; i+1 < len(h.roundTrips); i++ {
		for _, g := range h.roundTrips[i] {
			made[g]++
		}
		for _, g := range h.roundTrips[i] {
			if made[g] < calls && !slices.Contains(h.roundTrips[i+1], g) {
				leftBehind++
				break
			}
		}
	}
	t.Logf("%d calls in %d round trips, %d of them left a caller behind", goroutines*calls, len(h.roundTrips), leftBehind)
	if leftBehind > 10 {
		t.Errorf("%d of %d round trips left a caller behind; want at most 10: the waves split",
			leftBehind, len(h.roundTrips))
	}
}

// runWaves has goroutines callers make calls calls each through b, each
// coming straight back for the next.
func runWaves(t *testing.T, b *Batcher, goroutines, calls int) {
	t.Helper()
	script := echo(t)
	if err := script.Load(t.Context(), b.client).Err(); err != nil {
		t.Fatal(err) // else the first batch's NOSCRIPT retries would be round trips too
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range calls {
				if err := b.Run(t.Context(), script, nil, g).Err(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBatchRunsScriptsTheServerHasNotSeen(t *testing.T) {
	h := &batchHook{hold: make(chan struct{}), held: make(chan struct{})}
	b := newHookedBatcher(t, h)
	replies := queueBehindHeldCall(t, b, h, echo(t), contexts(t, 5))
	close(h.hold)
	checkEchoed(t, replies)
	if n := h.largestPipeline(); n != 5 {
		t.Errorf("the five queued calls went out in pipelines of at most %d; want one of 5", n)
	}
}

func TestBatchErrorReachesEveryCaller(t *testing.T) {
	injected := errors.New("injected: connection reset")
	h := &batchHook{hold: make(chan struct{}), held: make(chan struct{}), failWith: injected}
	b := newHookedBatcher(t, h)
	script := echo(t)
	replies := queueBehindHeldCall(t, b, h, script, contexts(t, 4))
	close(h.hold)
	for i := range replies {
		if err := reply(t, replies, i).Err(); !errors.Is(err, injected) {
			t.Errorf("caller %d: error %v; want the batch's error %v", i, err, injected)
		}
	}
	// The batcher is idle again: a lone call goes out by itself.
	if got, err := b.Run(t.Context(), script, nil, "after").Text(); err != nil || got != "after" {
		t.Errorf("a call after the failed batch: got %q, %v; want \"after\"", got, err)
	}
}

func TestBatchSenderGivingUpFailsNobody(t *testing.T) {
	h := &batchHook{
		hold: make(chan struct{}), held: make(chan struct{}),
		holdBatch: make(chan struct{}), batchHeld: make(chan struct{}),
	}
	b := newHookedBatcher(t, h)
	ctxs := contexts(t, 4)
	gaveUp, cancel := context.WithCancel(t.Context())
	ctxs[0] = gaveUp // the first queued caller sends the batch
	replies := queueBehindHeldCall(t, b, h, echo(t), ctxs)
	close(h.hold)
	wait.Recv(t, h.batchHeld, 10*time.Second, "the batch on its way")
	cancel()
	close(h.holdBatch)
	checkEchoed(t, replies)
}

func TestBatchQueuedCallerGivesUp(t *testing.T) {
	h := &batchHook{hold: make(chan struct{}), held: make(chan struct{})}
	b := newHookedBatcher(t, h)
	ctxs := contexts(t, 3)
	gaveUp, cancel := context.WithCancel(t.Context())
	ctxs[1] = gaveUp
	replies := queueBehindHeldCall(t, b, h, echo(t), ctxs)

	// While the call ahead is still held on the wire, caller 1 gives up:
	// it returns at once, and is not sent.
	cancel()
	select {
	case reply := <-replies[1]:
		if err := reply.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("caller 1 gave up: error %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("caller 1 gave up while queued, but still waited for the call ahead")
	}
	close(h.hold)
	checkEchoed(t, replies, 0, 2)
	if n := h.largestPipeline(); n != 2 {
		t.Errorf("the queued calls went out in pipelines of at most %d; want one of 2, without caller 1", n)
	}
}

// TestBatchTimeout checks that a batch on a connection that stops
// answering ends after the Batcher's timeout, as Redlock needs of a hung
// node, although no caller's context ends: the stalled pipeline ends with
// its context's cause, which without the Batcher's timeout would be none
// (after the hook's 5s), not DeadlineExceeded.
func TestBatchTimeout(t *testing.T) {
	h := &batchHook{hold: make(chan struct{}), held: make(chan struct{}), stall: true}
	const timeout = 100 * time.Millisecond
	b := newHookedBatcherTimeout(t, h, timeout)
	replies := queueBehindHeldCall(t, b, h, echo(t), contexts(t, 3))
	close(h.hold)
	for i := range replies {
		if err := reply(t, replies, i).Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("caller %d: error %v; want context.DeadlineExceeded", i, err)
		}
	}
}

// TestBatchRunAloneDoesNotQueue checks that RunAlone goes out while a
// call is on the wire, instead of queueing behind it as Run would.
func TestBatchRunAloneDoesNotQueue(t *testing.T) {
	h := &batchHook{hold: make(chan struct{}), held: make(chan struct{})}
	b := newHookedBatcher(t, h)
	defer close(h.hold)
	go b.Run(t.Context(), redis.NewScript("return 'first'"), nil)
	wait.Recv(t, h.held, 10*time.Second, "the first call held on the wire")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if got, err := b.RunAlone(ctx, echo(t), nil, "alone").Text(); err != nil || got != "alone" {
		t.Fatalf("RunAlone while a call is held on the wire: got %q, %v; want \"alone\"", got, err)
	}
}

func contexts(t *testing.T, n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = t.Context()
	}
	return ctxs
}
