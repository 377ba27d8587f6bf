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
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/luascript"
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

// The scripts run with EVALSHA, falling back to EVAL (which caches them on
// the server) the first time a node has not seen them.
var (
	//go:embed acquire.lua
	acquireSource string
	//go:embed raise.lua
	raiseSource string
	//go:embed release.lua
	releaseSource string

	acquireScript = redis.NewScript(acquireSource)
	raiseScript   = redis.NewScript(raiseSource)
	refreshScript = redis.NewScript(luascript.Refresh)
	releaseScript = redis.NewScript(releaseSource)
)

// Client is what a Locker needs from the go-redis client of one node:
// running scripts. *redis.Client satisfies it. Each node must be an
// independent Redis server (not replicas of one another, not one Cluster).
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
	// least its reading in microseconds. Nil is time.Now; the examples set
	// the Unix epoch, so that their tokens read 1, 2.
	FenceClock func() time.Time

	// MinBackoff and MaxBackoff bound the jittered exponential backoff
	// between attempts of a waiting Obtain. Defaults 5ms and 200ms.
	MinBackoff, MaxBackoff time.Duration
}

// Locker is a distlock.Locker on N independent Redis servers with the
// Redlock algorithm: a lock is held when a majority of the nodes granted
// it, within its lease. It is safe for concurrent use and holds no
// resources of its own: there is nothing to close.
type Locker struct {
	clients []Client
	opts    Options         // with defaults applied
	lease   lockstate.Lease // how a holder counts opts.TTL
	quorum  int             // N/2 + 1: any two quorums share a node
}

// New returns a Locker on the nodes behind clients. It does no I/O. It
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
	return &Locker{clients: slices.Clone(clients), opts: opts, lease: lease, quorum: len(clients)/2 + 1}
}

// Obtain takes every key, all or nothing, on a quorum of the nodes,
// retrying with jittered backoff until it succeeds or ctx ends; the lease
// never limits the wait. Duplicate keys are taken once.
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
	for attempt := 0; ; attempt++ {
		r := l.attempt(ctx, ks)
		if r.lock != nil || r.err != nil {
			return lockOrNil(r.lock), r.err
		}
		if r.unavailable != nil {
			if unavailable++; unavailable >= unavailableAfter {
				return nil, r.unavailable
			}
		} else {
			unavailable = 0
		}
		timer := time.NewTimer(l.backoff(attempt, r.pttl))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
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
		return r.lock, nil
	case r.err != nil:
		return nil, r.err
	case r.unavailable != nil:
		return nil, r.unavailable
	}
	return nil, fmt.Errorf("%w: %q is held on a quorum of nodes", distlock.ErrNotAcquired, ks.keys)
}

// lockOrNil keeps a nil *lock from becoming a non-nil distlock.Lock.
func lockOrNil(lk *lock) distlock.Lock {
	if lk == nil {
		return nil
	}
	return lk
}

// attemptResult is the outcome of one attempt: a lock, or an error that
// ends Obtain, or neither (then try again).
type attemptResult struct {
	lock        *lock
	err         error
	unavailable error         // failed nodes put a quorum out of reach; wraps ErrUnavailable
	pttl        time.Duration // shortest lease left on a node that refused; -1 if unknown
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
	fencing := "0"
	if l.opts.Fencing {
		fencing = "1"
	}
	// One clock reading for every node, so that nodes whose counters agree
	// give the same token, and the raise round can be skipped (see
	// acquire.lua).
	clock := start
	if l.opts.FenceClock != nil {
		clock = l.opts.FenceClock()
	}
	now := strconv.FormatInt(clock.UnixMicro(), 10)
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, c Client) ([]int64, error) {
		return acquireScript.Run(ctx, c, ks.acquireKeys, token, l.opts.TTL.Milliseconds(), fencing, now).Int64Slice()
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
		return attemptResult{lock: newLock(ctx, l, ks, token, fences, deadline)}
	}
	// Not held: undo whatever was granted, on every node (a node that timed
	// out may have run the script all the same), even if ctx has ended.
	l.releaseAll(context.WithoutCancel(ctx), ks, token)
	if ctx.Err() != nil {
		return attemptResult{err: errors.Join(distlock.ErrNotAcquired, ctx.Err())}
	}
	if len(failed) > len(l.clients)-l.quorum {
		res.unavailable = fmt.Errorf("%w: acquire %q: %d of %d nodes failed: %w",
			ErrUnavailable, ks.keys, len(failed), len(l.clients), errors.Join(failed...))
	}
	return res
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
	replies := fanOut(ctx, l, func(ctx context.Context, i int, c Client) (int64, error) {
		if !slices.Contains(granted, i) {
			return 0, nil // this node did not grant: nothing to raise
		}
		return raiseScript.Run(ctx, c, ks.acquireKeys, args...).Int64()
	})
	n := 0
	for _, r := range replies {
		if r.err == nil && r.val == 1 {
			n++
		}
	}
	return n
}

// releaseAll runs release.lua on every node, and returns on how many nodes
// every key was still held and is now deleted, and the errors of the nodes
// that failed.
func (l *Locker) releaseAll(ctx context.Context, ks *keySet, token string) (held int, failed []error) {
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, c Client) (int, error) {
		return releaseScript.Run(ctx, c, ks.lockKeys, token).Int()
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
// not all start at once), and waits for all of them: the goroutines it
// starts end before it returns. The calling goroutine makes the last call
// itself. replies[i] is the answer of node i.
func fanOut[T any](ctx context.Context, l *Locker, call func(ctx context.Context, node int, c Client) (T, error)) []reply[T] {
	replies := make([]reply[T], len(l.clients))
	one := func(i int, c Client) {
		ctx, cancel := context.WithTimeout(ctx, l.opts.NodeTimeout)
		defer cancel()
		v, err := call(ctx, i, c)
		replies[i] = reply[T]{v, err} // each call writes its own element
	}
	last := len(l.clients) - 1
	var wg sync.WaitGroup
	for i, c := range l.clients[:last] {
		wg.Go(func() { one(i, c) })
	}
	one(last, l.clients[last])
	wg.Wait()
	return replies
}

// keySet is the caller's keys and the Redis names derived from them, the
// same on every node.
type keySet struct {
	keys        []string // the caller's keys, without duplicates, in order
	lockKeys    []string // lockKeys[i] holds the owner token of keys[i]
	acquireKeys []string // pairs of (lock key, fence counter)
}

func (l *Locker) keySet(keys []string) (*keySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("redlock: Obtain needs at least one key")
	}
	ks := &keySet{}
	for _, k := range keys {
		if slices.Contains(ks.keys, k) { // a lock has a handful of keys: no map needed
			continue
		}
		ks.keys = append(ks.keys, k)
		ks.lockKeys = append(ks.lockKeys, l.lockKey(k))
		ks.acquireKeys = append(ks.acquireKeys, l.lockKey(k), l.fenceKey(k))
	}
	return ks, nil
}

func (l *Locker) lockKey(key string) string  { return l.opts.Prefix + "lock:" + key }
func (l *Locker) fenceKey(key string) string { return l.opts.Prefix + "fence:" + key }
