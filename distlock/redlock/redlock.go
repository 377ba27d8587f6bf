package redlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/batch"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/luascript"
	"github.com/seatlock/seatlock/distlock/internal/releases"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

var _ distlock.Locker = (*Locker)(nil)

// ErrUnavailable is returned, wrapped with the nodes' own errors, when so
// many nodes failed to answer (refused connections, timeouts) that a quorum
// was out of reach: by Obtain after unavailableAfter attempts in a row, by
// TryObtain at once, and by Refresh and Release. It is not
// distlock.ErrNotAcquired, so a service answers 503 rather than "busy".
var ErrUnavailable = errors.New("redlock: no quorum of nodes available")

// unavailableAfter is how many attempts in a row must find a quorum out of
// reach through failed nodes before Obtain gives up with ErrUnavailable.
// One attempt could be a hiccup (a scheduling pause beyond the node
// timeout); three in a row, a few tens of milliseconds apart, is an outage.
const unavailableAfter = 3

// The scripts of Redlock alone; those it shares with distlock's Redis
// backend are in internal/luascript. They run with EVALSHA, falling back to
// EVAL (which caches them on the server) the first time a node has not
// seen them.
var (
	//go:embed acquire.lua
	acquireSource string
	//go:embed raise.lua
	raiseSource string
	//go:embed raiseseen.lua
	raiseSeenSource string

	acquireScript   = redis.NewScript(acquireSource)
	raiseScript     = redis.NewScript(raiseSource)
	raiseSeenScript = redis.NewScript(raiseSeenSource)
)

// Client is what a Locker needs from the go-redis client of one node:
// running scripts. *redis.Client satisfies it. Each node must be an
// independent Redis server (not replicas of one another, not one Cluster).
// A client that can also subscribe to channels (a Subscribe method like
// *redis.Client's) lets waiters be woken by releases on that node;
// through clients that cannot, waiters poll.
type Client interface {
	redis.Scripter
}

// Options tunes a Locker. The zero value works.
type Options struct {
	// TTL is the lease of a lock on every node: a holder that vanishes
	// without releasing blocks its keys for at most this long. Default 10s.
	TTL time.Duration

	// RenewEvery is how often a lock's watchdog extends the lease while the
	// lock is held. Default TTL/3; a negative value disables the watchdog.
	// It must be below TTL minus the drift allowance (TTL/100 + 2ms) and
	// StopMargin.
	RenewEvery time.Duration

	// StopMargin is how long before its lease could end on the nodes a
	// lock is declared lost, so that its holder has that long to stop
	// what it does under the lock before a quorum may hand the keys on:
	// set it to the longest the holder takes to stop once Lost is closed.
	// It is taken off the validity of every acquisition and renewal (see
	// the package doc). Default 0: the loss is declared only the drift
	// allowance before. With the drift allowance it must leave more than
	// half the TTL.
	StopMargin time.Duration

	// NodeTimeout bounds every call to one node, so that a node that is
	// down or slow costs an attempt this much at most, not the lease.
	// Default TTL/20, at most 50ms. It must be below TTL/2. The clients
	// must honour context deadlines (redis.Options.ContextTimeoutEnabled)
	// for it to cut a call to a hung node short.
	NodeTimeout time.Duration

	// Prefix starts every Redis key this locker uses. Default
	// "seatlock:redlock:".
	Prefix string

	// Fencing makes Obtain issue fencing tokens (see the package doc for
	// when they are monotonic). It costs a second round trip per Obtain
	// when the nodes' counters disagree (see the package doc).
	// Without it, Lock.Token returns 0.
	Fencing bool

	// FenceClock is the clock fencing tokens start from: a token is at
	// least its reading in microseconds minus one second (a counter that
	// lags the clock by more than that jumps to it). Nil is time.Now; the examples set
	// the Unix epoch, so that their tokens read 1, 2.
	FenceClock func() time.Time

	// MinBackoff and MaxBackoff bound the jittered exponential backoff
	// between attempts of a waiting Obtain. Defaults 5ms and 200ms.
	MinBackoff, MaxBackoff time.Duration
}

// Locker is a distlock.Locker on N independent Redis servers with the
// Redlock algorithm: a lock is held when a majority of the nodes granted
// it, within its lease. It is safe for concurrent use. Call Close when
// done with it: it stops the pub/sub connections that wake waiters.
type Locker struct {
	nodes    []*batch.Batcher       // nodes[i] runs the scripts on node i, batching concurrent calls
	calls    callers                // the goroutines that make fanOut's calls
	subs     []*releases.Subscriber // subs[i] carries node i's releases; nil if its client cannot subscribe
	opts     Options                // with defaults applied
	lease    lockstate.Lease        // how a holder counts opts.TTL
	quorum   int                    // N/2 + 1: any two quorums share a node
	watchdog *watchdog.Watchdog     // renews and expires the held locks

	// The scripts' arguments that never change, boxed once.
	leaseMillis any // opts.TTL in milliseconds
	fencing     any // "1" with opts.Fencing, else "0"
}

// New returns a Locker on the nodes behind clients. It does no I/O: a
// node's pub/sub connection opens with the first waiter. It
// panics if there are no clients or opts are inconsistent: those are
// programming errors. An even number of nodes works but buys nothing: 4
// nodes need 3, and survive one failure like 3 nodes do.
func New(clients []Client, opts Options) *Locker {
	if len(clients) == 0 {
		panic("redlock: no clients")
	}
	if opts.TTL == 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.TTL < 10*time.Millisecond {
		panic(fmt.Sprintf("redlock: TTL %v is below 10ms", opts.TTL))
	}
	if opts.RenewEvery == 0 {
		opts.RenewEvery = opts.TTL / 3
	}
	lease := lockstate.Lease{TTL: opts.TTL, Drift: opts.TTL/100 + 2*time.Millisecond, StopMargin: opts.StopMargin}
	if err := lease.Check(opts.RenewEvery); err != nil {
		panic("redlock: " + err.Error())
	}
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = min(opts.TTL/20, 50*time.Millisecond)
	}
	if opts.NodeTimeout >= opts.TTL/2 {
		panic(fmt.Sprintf("redlock: NodeTimeout %v must be below TTL/2 (%v)", opts.NodeTimeout, opts.TTL/2))
	}
	if opts.Prefix == "" {
		opts.Prefix = "seatlock:redlock:"
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 5 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 200 * time.Millisecond
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	l := &Locker{
		nodes:       make([]*batch.Batcher, len(clients)),
		subs:        make([]*releases.Subscriber, len(clients)),
		opts:        opts,
		lease:       lease,
		quorum:      len(clients)/2 + 1,
		leaseMillis: opts.TTL.Milliseconds(),
		fencing:     "0",
		watchdog:    watchdog.New(watchdog.Options{Every: opts.RenewEvery}),
	}
	if opts.Fencing {
		l.fencing = "1"
	}
	for i, c := range clients {
		// A batch on the wire is bounded like a lone call: a hung node
		// costs a queued caller at most its wait plus one NodeTimeout.
		l.nodes[i] = batch.New(c, opts.NodeTimeout)
		if c, ok := c.(releases.Client); ok {
			l.subs[i] = releases.New(c)
		}
	}
	return l
}

// Close stops the pub/sub connections that wake waiting Obtains, and the
// goroutines kept for calls to the nodes, and waits for their goroutines.
// Obtains still waiting then poll; held locks are still renewed (the
// watchdog's goroutine ends once none is held), and calls to the nodes after Close start goroutines of their
// own.
func (l *Locker) Close() error {
	for _, s := range l.subs {
		if s != nil {
			s.Close()
		}
	}
	l.calls.close()
	return nil
}

// Obtain takes every key, all or nothing, on a quorum of the nodes,
// trying again until it succeeds or ctx ends; the lease never limits the
// wait. Duplicate keys are taken once. After a failed attempt it
// subscribes, on every node, to the release channels of the keys, and
// tries again once subscribed; then it tries whenever a node publishes a
// release, or after a jittered backoff when none does (a lease ran out).
//
// When ctx ends first, the error is errors.Join(distlock.ErrNotAcquired,
// ctx.Err()). When failed nodes put a quorum out of reach in
// unavailableAfter attempts in a row, the error wraps ErrUnavailable and
// the nodes' errors, and is not ErrNotAcquired.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, err := l.keySet(keys)
	if err != nil {
		return nil, err
	}
	unavailable := 0
	var w *waiter // after the first failed attempt
	defer func() { w.stop() }()
	for attempt := 0; ; attempt++ {
		r := l.attempt(ctx, ks)
		if r.lock != nil {
			wait := w.wait
			if w == nil {
				wait = lockstate.Sleep // not subscribed: poll
			}
			l.topUp(ctx, r.lock, r.refused, wait)
			return r.lock, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.unavailable != nil {
			if unavailable++; unavailable >= unavailableAfter {
				return nil, r.unavailable
			}
		} else {
			unavailable = 0
		}
		wait := w.wait
		if w == nil {
			// Subscribe, and try again once subscribed: a release
			// published before would otherwise go unseen.
			w = l.watch(ks)
			wait = w.subscribed
		}
		if err := wait(ctx, l.backoff(attempt, r.pttl)); err != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, err)
		}
	}
}

// waiter is a waiting Obtain's subscription to its keys' releases, on
// every node whose client can subscribe.
type waiter struct {
	watches []*releases.Watch
	wake    chan struct{} // shared by the watches; capacity 1
}

func (l *Locker) watch(ks *keySet) *waiter {
	w := &waiter{wake: make(chan struct{}, 1)}
	for _, s := range l.subs {
		if s != nil {
			w.watches = append(w.watches, s.Watch(ks.lockKeys, w.wake))
		}
	}
	return w
}

// subscribed returns once every node's subscription is in place, or after
// d (a node that is down never confirms one), or with ctx's error.
func (w *waiter) subscribed(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, watch := range w.watches {
		select {
		case <-watch.Ready():
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// wait returns when a node published a release of a key since the last
// wait, or after d, or with ctx's error.
func (w *waiter) wait(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-w.wake:
		return nil
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *waiter) stop() {
	if w == nil {
		return
	}
	for _, watch := range w.watches {
		watch.Stop()
	}
}

// TryObtain makes one attempt to take every key on a quorum of the nodes.
// It returns an error wrapping distlock.ErrNotAcquired when the keys are
// held (or the vote was split), or wrapping ErrUnavailable when failed
// nodes put a quorum out of reach.
func (l *Locker) TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, err := l.keySet(keys)
	if err != nil {
		return nil, err
	}
	r := l.attempt(ctx, ks)
	switch {
	case r.lock != nil:
		l.topUp(ctx, r.lock, r.refused, nil)
		return r.lock, nil
	case r.err != nil:
		return nil, r.err
	case r.unavailable != nil:
		return nil, r.unavailable
	}
	return nil, fmt.Errorf("%w: %q is held on a quorum of nodes", distlock.ErrNotAcquired, ks.keys)
}

// attemptResult is the outcome of one attempt: a lock, or an error that
// ends Obtain, or neither (then try again).
type attemptResult struct {
	lock        *lock
	err         error
	unavailable error         // failed nodes put a quorum out of reach; wraps ErrUnavailable
	pttl        time.Duration // shortest lease left on a node that refused; -1 if unknown
	refused     []int         // the nodes that answered that a key was held
}

// attempt is one round of Redlock: the acquire script on every node at
// once, each bounded by NodeTimeout; with fencing, unless a quorum of the
// granting nodes agree on every counter already, a second round that
// raises the fence counters on the nodes that granted. The lock holds iff a
// quorum granted (and raised) and the validity, TTL minus the time spent
// minus the drift allowance, is still positive. Otherwise every node is
// told to release, so that a partial or late grant does not block others
// for a lease.
func (l *Locker) attempt(ctx context.Context, ks *keySet) attemptResult {
	token := lockstate.OwnerToken()
	start := time.Now()
	deadline := l.leaseEnd(start)
	// One clock reading for every node, so that nodes whose counters agree
	// give the same token, and the raise round can be skipped (see
	// acquire.lua).
	args := l.acquireArgs(token)
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, node *batch.Batcher) ([]int64, error) {
		return acquire(ctx, node, ks.acquireKeys, args)
	})

	res := attemptResult{pttl: -1}
	var granted []int // indexes of the nodes that granted every key
	var failed []error
	fences := make([]int64, len(ks.keys)) // the max counter per key over the granting nodes
	for i, r := range replies {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Errorf("node %d: %w", i, r.err))
		case len(r.val) == 2 && r.val[0] == 0:
			res.refused = append(res.refused, i)
			if p := time.Duration(r.val[1]) * time.Millisecond; p >= 0 && (res.pttl < 0 || p < res.pttl) {
				res.pttl = p
			}
		case len(r.val) == 1+len(ks.keys) && r.val[0] == 1:
			granted = append(granted, i)
			for k, f := range r.val[1:] {
				fences[k] = max(fences[k], f)
			}
		default:
			failed = append(failed, fmt.Errorf("node %d: unexpected reply %v", i, r.val))
		}
	}

	ok := len(granted) >= l.quorum && time.Now().Before(deadline)
	if ok && l.opts.Fencing && !agreeingQuorum(replies, granted, fences, l.quorum) {
		ok = l.raise(ctx, ks, token, fences, granted) >= l.quorum && time.Now().Before(deadline)
	}
	if ok {
		return attemptResult{lock: newLock(l, ks, token, fences, deadline), refused: res.refused}
	}
	// Not held: undo whatever was granted, on every node (a node that timed
	// out may have run the script all the same), even if ctx has ended.
	l.releaseAll(context.WithoutCancel(ctx), ks, token)
	if ctx.Err() != nil {
		return attemptResult{err: errors.Join(distlock.ErrNotAcquired, ctx.Err())}
	}
	if len(failed) > len(l.nodes)-l.quorum {
		res.unavailable = fmt.Errorf("%w: acquire %q: %d of %d nodes failed: %w",
			ErrUnavailable, ks.keys, len(failed), len(l.nodes), errors.Join(failed...))
	}
	return res
}

// topUp takes the keys of a lock just won on the nodes that refused them,
// so that the lock sits on every node it can, not on a bare quorum, which
// one more node failure would take away. Those nodes refused because a key
// was still held there a moment ago: by the previous holder, whose release
// had not reached them yet, or by a rival whose attempt split the vote and
// who gives its keys back at once. Neither is a holder any more (this lock
// holds a quorum, and two quorums share a node), so their keys go soon.
//
// topUp tries each refusing node at once, then, for as long as one
// NodeTimeout, again after every wait(ctx, MinBackoff), which returns
// early when a node publishes a release. A nil wait makes one try only
// (TryObtain's). A key still held at the end is left alone: the lock holds
// on its quorum all the same.
//
// A node taken here is one more node that holds the lock for its owner:
// Refresh extends it there and Release deletes it, as on any other. It
// changes no fencing token: the acquire script moves the node's counters
// as in any attempt, which only keeps them in step with the others.
func (l *Locker) topUp(ctx context.Context, lk *lock, refused []int, wait func(context.Context, time.Duration) error) {
	end := time.Now().Add(l.opts.NodeTimeout)
	for len(refused) > 0 {
		args := l.acquireArgs(lk.token)
		replies := fanOut(ctx, l, func(ctx context.Context, i int, node *batch.Batcher) ([]int64, error) {
			if !slices.Contains(refused, i) {
				return nil, nil // granted already, or failed: not for now
			}
			return acquire(ctx, node, lk.ks.acquireKeys, args)
		})
		still := refused[:0]
		for _, i := range refused {
			if r := replies[i]; r.err == nil && len(r.val) == 2 && r.val[0] == 0 {
				still = append(still, i) // held still; taken or failed: done
			}
		}
		refused = still
		if len(refused) == 0 || wait == nil || !time.Now().Before(end) {
			return
		}
		if wait(ctx, min(l.opts.MinBackoff, time.Until(end))) != nil {
			return
		}
	}
}

// acquire runs acquire.lua on node and returns its reply as a list:
// {1, counter_1, ...} when it took every key, {0, pttl} when a key was
// held. The script answers a bare counter for one key taken, which spares
// the node a Lua table per grant, the common case.
func acquire(ctx context.Context, node *batch.Batcher, keys []string, args []any) ([]int64, error) {
	v, err := node.Run(ctx, acquireScript, keys, args...).Result()
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case int64:
		return []int64{1, v}, nil
	case []any:
		list := make([]int64, len(v))
		for i, e := range v {
			n, ok := e.(int64)
			if !ok {
				return nil, fmt.Errorf("redlock: acquire answered %v", v)
			}
			list[i] = n
		}
		return list, nil
	}
	return nil, fmt.Errorf("redlock: acquire answered %v", v)
}

// agreeingQuorum reports whether a quorum of the granting nodes already
// returned the fencing token of every key as its counter: then those
// counters were set to the tokens by the acquire script itself, while the
// node took the keys, which is all that raise.lua would do, and the second
// round trip can be skipped. It is the common case: counters drift apart
// only when an attempt fails on some nodes or a node misses increments
// while it is down.
func agreeingQuorum(replies []reply[[]int64], granted []int, fences []int64, quorum int) bool {
	agreeing := 0
	for _, i := range granted {
		if slices.Equal(replies[i].val[1:], fences) {
			agreeing++
		}
	}
	return agreeing >= quorum
}

// raise runs raise.lua on the nodes that granted, so that their fence
// counters are at least the tokens now, and returns on how many it did.
func (l *Locker) raise(ctx context.Context, ks *keySet, token string, fences []int64, granted []int) int {
	args := make([]any, 0, 1+len(fences))
	args = append(args, token)
	for _, f := range fences {
		args = append(args, f)
	}
	replies := fanOut(ctx, l, func(ctx context.Context, i int, node *batch.Batcher) (int64, error) {
		if !slices.Contains(granted, i) {
			return 0, nil // this node did not grant: nothing to raise
		}
		return node.Run(ctx, raiseScript, ks.acquireKeys, args...).Int64()
	})
	n := 0
	for _, r := range replies {
		if r.err == nil && r.val == 1 {
			n++
		}
	}
	return n
}

// RaiseFences raises the fence counter of each key, on every node that
// answers, so that the next fencing token of the key is greater than
// seen[key], a token the key's resource was written with: a counter below
// it, or gone, is set to it, one at or above it is left alone. Keys are
// the caller's, as given to Obtain.
//
// It is what a resource that refuses a token as stale calls for: nodes
// that lost their counters issue tokens from the clients' clocks, and a
// clock that stepped back issues tokens older than the ones the resource
// saw. A quorum raised is enough: the next lock's quorum shares a node
// with it, whose counter, and so the token, goes above seen. Raising never
// lowers a counter, so it is safe with any fence the resource reports,
// whoever holds the keys.
//
// It returns an error wrapping ErrUnavailable, and the nodes' errors, when
// fewer than a quorum of nodes were raised.
func (l *Locker) RaiseFences(ctx context.Context, seen map[string]int64) error {
	if len(seen) == 0 {
		return nil
	}
	keys := make([]string, 0, len(seen))
	args := make([]any, 0, len(seen))
	for key, fence := range seen {
		keys = append(keys, l.fenceKey(key))
		args = append(args, strconv.FormatInt(fence, 10))
	}
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, node *batch.Batcher) (int64, error) {
		return node.Run(ctx, raiseSeenScript, keys, args...).Int64()
	})
	var failed []error
	for i, r := range replies {
		if r.err != nil {
			failed = append(failed, fmt.Errorf("node %d: %w", i, r.err))
		}
	}
	if len(l.nodes)-len(failed) < l.quorum {
		return fmt.Errorf("redlock: raise fences: %w", errors.Join(append([]error{ErrUnavailable}, failed...)...))
	}
	return nil
}

// releaseAll runs release.lua on every node, and returns on how many nodes
// every key was still held and is now deleted, and the errors of the nodes
// that failed.
func (l *Locker) releaseAll(ctx context.Context, ks *keySet, token string) (held int, failed []error) {
	args := []any{token} // one slice for every node
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, node *batch.Batcher) (int, error) {
		return node.Run(ctx, luascript.Release, ks.lockKeys, args...).Int()
	})
	for i, r := range replies {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Errorf("node %d: %w", i, r.err))
		case r.val == len(ks.keys):
			held++
		}
	}
	return held, failed
}

// leaseEnd returns until when a lease set on the nodes by commands sent at
// start is surely valid on a quorum of them, less StopMargin: TTL minus
// the drift allowance, one percent of the TTL plus 2ms for clocks that run
// at different rates and for the granularity of expiry on the nodes, minus
// the time the holder needs to stop. The validity of the Redlock paper,
// TTL - elapsed - drift, less the margin, is what is left of it once the
// last node answered.
func (l *Locker) leaseEnd(start time.Time) time.Time {
	return l.lease.End(start)
}

// backoff returns how long a waiting Obtain sleeps before its next attempt:
// jittered exponential between MinBackoff and MaxBackoff, so that rivals
// who split the vote do not collide again in lockstep; but no longer than
// the shortest lease left on a refusing node, so an expiry is noticed
// promptly.
func (l *Locker) backoff(attempt int, pttl time.Duration) time.Duration {
	return lockstate.Backoff(attempt, l.opts.MinBackoff, l.opts.MaxBackoff, pttl)
}

// reply is one node's answer.
type reply[T any] struct {
	val T
	err error
}

// fanOut runs call on every node at once, each with its own deadline of
// NodeTimeout from when its call starts (on a loaded machine the calls do
// not all start at once), and waits for all of them. The calling goroutine
// makes the last call itself, the Locker's callers the others.
// replies[i] is the answer of node i.
func fanOut[T any](ctx context.Context, l *Locker, call func(ctx context.Context, i int, node *batch.Batcher) (T, error)) []reply[T] {
	replies := make([]reply[T], len(l.nodes))
	one := func(i int, node *batch.Batcher) {
		ctx, cancel := context.WithTimeout(ctx, l.opts.NodeTimeout)
		defer cancel()
		v, err := call(ctx, i, node)
		replies[i] = reply[T]{v, err} // each call writes its own element
	}
	last := len(l.nodes) - 1
	var wg sync.WaitGroup
	wg.Add(last)
	for i, node := range l.nodes[:last] {
		l.calls.run(func() {
			defer wg.Done()
			one(i, node)
		})
	}
	one(last, l.nodes[last])
	wg.Wait()
	return replies
}

// keySet is the caller's keys and the Redis names derived from them, the
// same on every node.
type keySet struct {
	keys        []string // the caller's keys, without duplicates, in order
	lockKeys    []string // lockKeys[i] holds the owner token of keys[i]; its releases are published on a channel of its name
	acquireKeys []string // pairs of (lock key, fence counter)
}

func (l *Locker) keySet(keys []string) (*keySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("redlock: Obtain needs at least one key")
	}
	ks := &keySet{
		keys:        make([]string, 0, len(keys)),
		lockKeys:    make([]string, 0, len(keys)),
		acquireKeys: make([]string, 0, 2*len(keys)),
	}
	for _, k := range keys {
		if slices.Contains(ks.keys, k) { // a lock has a handful of keys: no map needed
			continue
		}
		lockKey := l.lockKey(k)
		ks.keys = append(ks.keys, k)
		ks.lockKeys = append(ks.lockKeys, lockKey)
		ks.acquireKeys = append(ks.acquireKeys, lockKey, l.fenceKey(k))
	}
	return ks, nil
}

// acquireArgs returns acquire.lua's ARGV for an attempt by owner token:
// with one reading of the fence clock, in microseconds, for every node.
func (l *Locker) acquireArgs(token string) []any {
	clock := time.Now()
	if l.opts.FenceClock != nil {
		clock = l.opts.FenceClock()
	}
	return []any{token, l.leaseMillis, l.fencing, strconv.FormatInt(clock.UnixMicro(), 10)}
}

func (l *Locker) lockKey(key string) string  { return l.opts.Prefix + "lock:" + key }
func (l *Locker) fenceKey(key string) string { return l.opts.Prefix + "fence:" + key }
