package distlock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/internal/batch"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/luascript"
	"github.com/seatlock/seatlock/distlock/internal/releases"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

var (
	_ Locker      = (*Redis)(nil)
	_ RedisClient = (redis.UniversalClient)(nil) // so a Cluster client works
)

// The scripts of this backend alone; those it shares with Redlock are in
// internal/luascript. They run with EVALSHA, falling back to EVAL (which
// caches them on the server) the first time a server has not seen them.
var (
	//go:embed acquire.lua
	acquireSource string

	//go:embed raise.lua
	raiseSource string

	acquireScript = redis.NewScript(acquireSource)
	raiseScript   = redis.NewScript(raiseSource)
)

// RedisClient is what Redis needs from a go-redis client: running scripts
// and subscribing to channels. *redis.Client, *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient all satisfy it. Those can also
// pipeline (they have a Pipeline method), and Redis then sends the scripts
// of concurrent callers together (see the package documentation); with a
// client that cannot, every script is a round trip of its own.
type RedisClient interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// RedisOptions tunes a Redis locker. The zero value works.
type RedisOptions struct {
	// TTL is the lease of a lock: a holder that vanishes without releasing
	// blocks its keys for at most this long. Default 10s.
	TTL time.Duration

	// RenewEvery is how often the watchdog extends a lock's lease while the
	// lock is held. Default TTL/3; a negative value disables renewals (the
	// lease then runs out TTL after Obtain unless Refresh is called, and
	// the watchdog only declares the loss). It must be below TTL minus
	// the drift allowance (TTL/100) and StopMargin.
	RenewEvery time.Duration

	// StopMargin is how long before its lease could end on the server a
	// lock is declared lost, so that its holder has that long to stop
	// what it does under the lock before Redis may hand the keys on: set
	// it to the longest the holder takes to stop once Lost is closed.
	// Default 0: the loss is declared only the drift allowance (TTL/100)
	// before. With the drift allowance it must leave more than half the
	// TTL.
	StopMargin time.Duration

	// FenceTTL is how long a key's fence counter outlives the last fencing
	// token it gave. Default 24h. The token after a counter expired comes
	// from the server's clock and is newer than every token before it (see
	// Fencing tokens in the package documentation), so expiring is safe;
	// FenceTTL is how far back the server's clock may step between two
	// locks of one key, and must be at least a second.
	FenceTTL time.Duration

	// Prefix starts every Redis key and channel this locker uses. Default
	// "seatlock:". It must not contain '{' or '}', so that the hash tag of
	// the caller's key decides the Cluster slot.
	Prefix string

	// MinBackoff and MaxBackoff bound the jittered exponential backoff with
	// which a waiting Obtain polls when no release notification wakes it
	// (for example when the holder's lease expired, which publishes
	// nothing). Defaults 10ms and 500ms.
	MinBackoff, MaxBackoff time.Duration

	// Observer, if not nil, is told of every renewal the watchdog makes
	// and of every held lock found lost, for metrics. Nil observes nothing.
	Observer RenewalObserver

	// WaitReplicas, when above 0, turns on replica-acknowledged acquires:
	// after the keys are taken, Obtain sends WAIT on the same connection
	// and grants the lock only once that many replicas of the primary
	// have acknowledged the acquire (lock keys and fence counters). If
	// fewer do within WaitTimeout, it releases the keys and fails with
	// ErrNotReplicated. Default 0: no WAIT, the lock is granted as soon
	// as the primary has it.
	//
	// What it buys: the primary crashing right after a grant, and a
	// replica that acknowledged it being promoted, does not hand the
	// lock out a second time: the promoted replica has the key, its
	// lease and its fence counter. What it does not: WAIT is not a
	// consensus. With more replicas than WaitReplicas, a failover may
	// promote one that did not acknowledge (Sentinel does not prefer the
	// one that did), and the grant is lost as it would be without WAIT. A replica without
	// persistence that restarts loses what it acknowledged. Lease renewals
	// and releases are not waited for, so a promoted replica may hold a
	// lease shorter than the holder believes, down to the TTL from the
	// acquire. And an acquire that failed for want of acknowledgements may
	// still reach the replicas later; its release follows it.
	//
	// It needs a client of one primary that can hand out a connection of
	// its own (a *redis.Client, plain or a Sentinel failover client): WAIT
	// counts the acknowledgements of the writes made on its connection.
	// NewRedis panics when the client cannot.
	WaitReplicas int

	// WaitTimeout bounds an acquire of WaitReplicas from the moment it
	// asks for a connection to the answer of its WAIT: the wait for a
	// free connection of the client's pool and the WAIT share it, so an
	// acquire that cannot be replicated fails within WaitTimeout (and the
	// round trips of the acquire script and WAIT), however many others
	// are waiting. Default TTL/10; it must be below TTL/2, so that a
	// granted lock always has most of its lease left.
	WaitTimeout time.Duration

	// WaitClient, if not nil, is the client whose connections carry the
	// acquires of WaitReplicas, each held for up to WaitTimeout: give it
	// a pool of its own (the same primary as the locker's client), so
	// that acquires waiting for replicas never queue the locker's
	// renewals and releases, or anything else of its client, behind
	// them. Default: the locker's client.
	WaitClient *redis.Client
}

// ErrNotReplicated is returned by Obtain and TryObtain, wrapped, when
// RedisOptions.WaitReplicas is set and fewer replicas than that
// acknowledged the acquire within WaitTimeout. The keys were released
// again (or, if Redis could not be reached for that, are freed by their
// lease). It is not ErrNotAcquired: the lock service is not as available
// as it was asked to be.
var ErrNotReplicated = errors.New("distlock: not acknowledged by enough replicas")

// connClient is what WaitReplicas needs of a client: a connection of its
// own, so that WAIT follows the acquire's writes on the same connection.
type connClient interface {
	Conn() *redis.Conn
}

// RenewalObserver is told what the watchdog of a Redis locker does. Its
// methods are called from the watchdog's goroutines, never under a lock of
// the locker, possibly at the same time: they must be safe for concurrent
// use and return at once (count, do not wait), because a slow observer
// delays the watchdog's next look at every lock.
type RenewalObserver interface {
	// Renewed reports one renewal: err is nil when the lease was
	// extended, or the error from Redis when it could not be (the lease
	// stays valid until its deadline and the renewal is tried again
	// sooner). A renewal that finds a key gone or taken is reported by
	// Lost instead, and one cut short by Close is not reported.
	Renewed(err error)

	// Lost reports a held lock declared lost, once per lock: a renewal
	// (or Refresh) found a key gone or held by another owner, or the
	// lease ran out before a renewal succeeded. Locks given up by Close
	// are not reported.
	Lost()
}

// Redis is a Locker on one Redis server or Cluster. Each key is a Redis key
// holding the holder's random owner token with a lease (PX); one watchdog
// goroutine per Redis extends the leases of all the locks it holds; a fence
// counter per key, which expires FenceTTL after its last token, issues the
// fencing tokens.
//
// Keys locked together must live in one Cluster slot: give them a common
// hash tag, such as "{screening-42}:C7" and "{screening-42}:C8". A key
// without a hash tag is wrapped in one, so that its lock key and fence
// counter share a slot.
//
// A Redis is safe for concurrent use. Call Close when done with it.
type Redis struct {
	client      RedisClient
	scripts     *batch.Batcher  // runs the scripts, batching concurrent calls
	opts        RedisOptions    // with defaults applied
	lease       lockstate.Lease // how a holder counts opts.TTL
	leaseMillis any             // opts.TTL in milliseconds, boxed once for the scripts' ARGV
	fenceMillis any             // opts.FenceTTL in milliseconds, boxed once for acquire.lua
	sub         *releases.Subscriber
	watchdog    *watchdog.Watchdog
	conns       connClient // set only with opts.WaitReplicas
}

// NewRedis returns a Redis locker that talks to Redis through client. It
// does no I/O. It panics if opts are inconsistent (a TTL below 1ms, a
// StopMargin that leaves the holder half the TTL or less, RenewEvery not
// below what it leaves): those are programming errors.
func NewRedis(client RedisClient, opts RedisOptions) *Redis {
	if opts.TTL == 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.TTL < time.Millisecond {
		panic(fmt.Sprintf("distlock: TTL %v is below 1ms", opts.TTL))
	}
	if opts.RenewEvery == 0 {
		opts.RenewEvery = opts.TTL / 3
	}
	lease := lockstate.Lease{TTL: opts.TTL, Drift: opts.TTL / 100, StopMargin: opts.StopMargin}
	if err := lease.Check(opts.RenewEvery); err != nil {
		panic("distlock: " + err.Error())
	}
	if opts.FenceTTL == 0 {
		opts.FenceTTL = 24 * time.Hour
	}
	if opts.FenceTTL < time.Second {
		panic(fmt.Sprintf("distlock: FenceTTL %v is below 1s", opts.FenceTTL))
	}
	if opts.Prefix == "" {
		opts.Prefix = "seatlock:"
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		panic(fmt.Sprintf("distlock: Prefix %q must not contain '{' or '}'", opts.Prefix))
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 500 * time.Millisecond
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	r := &Redis{client: client, scripts: batch.New(client, 0), opts: opts, lease: lease, leaseMillis: opts.TTL.Milliseconds(), fenceMillis: opts.FenceTTL.Milliseconds(), sub: releases.New(client)}
	if opts.WaitReplicas < 0 {
		panic(fmt.Sprintf("distlock: WaitReplicas %d is negative", opts.WaitReplicas))
	}
	if opts.WaitReplicas > 0 {
		if opts.WaitTimeout == 0 {
			r.opts.WaitTimeout = opts.TTL / 10
		}
		if r.opts.WaitTimeout <= 0 || r.opts.WaitTimeout >= opts.TTL/2 {
			panic(fmt.Sprintf("distlock: WaitTimeout %v must be above 0 and below TTL/2 (%v)", r.opts.WaitTimeout, opts.TTL/2))
		}
		conns, ok := client.(connClient)
		if opts.WaitClient != nil {
			conns, ok = opts.WaitClient, true
		}
		if !ok {
			panic(fmt.Sprintf("distlock: WaitReplicas needs a client of one primary with a Conn method, such as *redis.Client, not %T", client))
		}
		r.conns = conns
	}
	wopts := watchdog.Options{Every: opts.RenewEvery}
	if obs := opts.Observer; obs != nil {
		wopts.OnRenewed, wopts.OnLost = obs.Renewed, obs.Lost
	}
	r.watchdog = watchdog.New(wopts)
	return r
}

// Close stops the watchdog and the pub/sub connection that wakes waiting
// Obtains, and waits for their goroutines to end, renewals in flight
// included. It does not close the client, and it does not release held
// locks: release them first. A lock still held is declared lost (its Lost
// channel is closed), because nobody renews it any more; Release still
// deletes its keys. A lock obtained after Close is lost from the start, and
// an Obtain that waits after Close is only woken by its backoff polling.
// Close always returns nil.
func (r *Redis) Close() error {
	for _, l := range r.watchdog.Close() {
		l := l.(*redisLock)
		l.lose(fmt.Errorf("%w: the locker of %q was closed", ErrLost, l.keys))
	}
	r.sub.Close()
	return nil
}

// Obtain takes every key, all or nothing, waiting until the keys are free or
// ctx ends; the lease never limits the wait. Duplicate keys are taken once.
//
// A waiter subscribes to the release channel of each key and checks again
// once the subscription is in place, so no release is missed; it is then
// woken by the release notification, or by its backoff polling when a lease
// expired instead.
//
// When ctx ends first, the error is errors.Join(ErrNotAcquired, ctx.Err()).
// An error from Redis (for example a refused connection) is returned
// wrapped as it is, and is not ErrNotAcquired; with WaitReplicas, so is
// ErrNotReplicated.
func (r *Redis) Obtain(ctx context.Context, keys ...string) (Lock, error) {
	l, err := r.newLock(keys)
	if err != nil {
		return nil, err
	}
	held, err := r.acquire(ctx, l)
	if held.index < 0 || err != nil {
		return lockOrNil(l, err)
	}

	// Held. Subscribe before trying again: a release published between our
	// failed attempt and the subscription would otherwise be missed.
	w := r.sub.Watch(l.lockKeys, nil) // a key's release is published on a channel of its name
	defer w.Stop()
	ready := w.Ready()
	for attempt := 0; ; attempt++ {
		timer := time.NewTimer(r.backoff(attempt, held.pttl))
		select {
		case <-ready:
			ready = nil // subscribed: check once more, then wait for a push
		case <-w.Wake():
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, errors.Join(ErrNotAcquired, ctx.Err())
		}
		timer.Stop()
		held, err = r.acquire(ctx, l)
		if held.index < 0 || err != nil {
			return lockOrNil(l, err)
		}
	}
}

// TryObtain takes every key, all or nothing, without waiting. It returns an
// error wrapping ErrNotAcquired at once when a key is held, an error from
// Redis, wrapped, when Redis could not be asked, or, with WaitReplicas, an
// error wrapping ErrNotReplicated.
func (r *Redis) TryObtain(ctx context.Context, keys ...string) (Lock, error) {
	l, err := r.newLock(keys)
	if err != nil {
		return nil, err
	}
	held, err := r.acquire(ctx, l)
	if err != nil {
		return nil, err
	}
	if held.index >= 0 {
		return nil, fmt.Errorf("%w: %q is held", ErrNotAcquired, l.keys[held.index])
	}
	return l, nil
}

// lockOrNil returns l as a Lock, or a nil Lock (not a nil *redisLock in a
// non-nil interface) with err.
func lockOrNil(l *redisLock, err error) (Lock, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

// heldKey describes the key that made an acquire attempt fail.
type heldKey struct {
	index int           // into redisLock.keys; -1 when no key was held
	pttl  time.Duration // what is left of its lease; negative if unknown
}

// acquire makes one attempt to take l's keys, in one round trip, and
// hands l to the watchdog when it succeeds. It returns which key is held
// (index -1 when l is now held), or an error from Redis. Every attempt
// sends the same owner token: a failed attempt leaves nothing behind.
func (r *Redis) acquire(ctx context.Context, l *redisLock) (heldKey, error) {
	sent := time.Now()
	var conn *redis.Conn
	var cmd *redis.Cmd
	if r.conns != nil {
		// WAIT counts what replicas acknowledged of the writes made on
		// its own connection, so the acquire goes on that one, without
		// the batcher. The connection is taken from the pool by the
		// script's call, whose context bounds that wait by WaitTimeout:
		// a pool whose connections all sit in WAITs fails the acquire
		// rather than queueing it behind them.
		conn = r.conns.Conn()
		defer conn.Close() // back to the pool
		sctx, cancel := context.WithDeadline(ctx, sent.Add(r.opts.WaitTimeout))
		cmd = acquireScript.Run(sctx, conn, l.acquireKeys, l.argv[:]...)
		cancel()
	} else {
		cmd = r.scripts.Run(ctx, acquireScript, l.acquireKeys, l.argv[:]...)
	}
	if err := cmd.Err(); err != nil {
		if ctx.Err() != nil {
			// The reply may have been lost after the script ran; if so the
			// keys stay taken until the lease runs out.
			return heldKey{}, errors.Join(ErrNotAcquired, ctx.Err())
		}
		return heldKey{}, fmt.Errorf("distlock: acquire %q: %w", l.keys, err)
	}
	held, err := l.takeFences(cmd.Val())
	if held.index >= 0 || err != nil {
		return held, err
	}
	if conn != nil {
		if err := r.replicated(ctx, conn, l, sent); err != nil {
			return heldKey{}, err
		}
	}
	if !r.watchdog.Watch(&l.wd, l, r.leaseEnd(sent)) {
		l.lose(fmt.Errorf("%w: the locker of %q was closed", ErrLost, l.keys))
	}
	return heldKey{index: -1}, nil
}

// replicated waits, with WAIT on conn, until opts.WaitReplicas replicas
// have acknowledged the acquire just made on conn. If fewer do by
// WaitTimeout after sent (when the acquire began), or WAIT fails, it
// releases l's keys and returns an error: one wrapping ErrNotReplicated,
// or ErrNotAcquired joined with ctx.Err(), or the error from Redis,
// wrapped.
func (r *Redis) replicated(ctx context.Context, conn *redis.Conn, l *redisLock, sent time.Time) error {
	want := int64(r.opts.WaitReplicas)
	// What the pool wait left of WaitTimeout, at least WAIT's unit of a
	// millisecond: a timeout of 0 would make WAIT block for ever.
	timeout := max(time.Until(sent.Add(r.opts.WaitTimeout)), time.Millisecond)
	acked, err := conn.Wait(ctx, r.opts.WaitReplicas, timeout).Result()
	if err == nil && acked >= want {
		return nil
	}
	// Give the keys back now rather than at the end of their lease, and
	// wake whoever waits for them. Not on conn, which may be broken, and
	// not bounded by ctx, which may have ended; if Redis cannot be
	// reached, the lease frees them.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.WaitTimeout)
	defer cancel()
	_ = r.scripts.Run(rctx, luascript.Release, l.lockKeys, l.argv[:1]...).Err()
	switch {
	case err == nil:
		return fmt.Errorf("%w: %d of %d replicas acknowledged %q within %v", ErrNotReplicated, acked, want, l.keys, r.opts.WaitTimeout)
	case ctx.Err() != nil:
		return errors.Join(ErrNotAcquired, ctx.Err())
	default:
		return fmt.Errorf("distlock: acquire %q: wait for replicas: %w", l.keys, err)
	}
}

// RaiseFences raises the fence counter of each key so that the next
// fencing token of the key is greater than seen[key], a token the key's
// resource was written with: a counter below it, or gone, is set to it, a
// counter at or above it is left alone. Keys are the caller's, as given to
// Obtain; all of them must live in one Cluster slot (a common hash tag).
//
// It is what a resource that refuses a token as stale calls for: a Redis
// that lost its counters (a restart without persistence, a failover to a
// replica that never saw them) issues tokens from its clock, and a clock
// that stepped back issues tokens older than the ones the resource saw,
// until it catches up. After RaiseFences, the next Obtain of those keys
// gets a token newer than seen. Raising never lowers a counter, so it
// cannot make any token older than one issued before, and is safe to call
// with any fence the resource reports, whoever holds the keys.
//
// It returns an error from Redis, wrapped, when Redis could not be asked.
func (r *Redis) RaiseFences(ctx context.Context, seen map[string]int64) error {
	if len(seen) == 0 {
		return nil
	}
	keys := make([]string, 0, len(seen))
	args := make([]any, 0, len(seen)+1)
	for key, fence := range seen {
		_, counter := r.names(key)
		keys = append(keys, counter)
		args = append(args, strconv.FormatInt(fence, 10))
	}
	args = append(args, r.fenceMillis)
	if err := raiseScript.Run(ctx, r.client, keys, args...).Err(); err != nil {
		return fmt.Errorf("distlock: raise fences: %w", err)
	}
	return nil
}

// backoff returns how long a waiter sleeps before polling again when no
// release notification comes: jittered exponential between MinBackoff and
// MaxBackoff, but no longer than what was left of the holder's lease.
func (r *Redis) backoff(attempt int, pttl time.Duration) time.Duration {
	return lockstate.Backoff(attempt, r.opts.MinBackoff, r.opts.MaxBackoff, pttl)
}

// names returns the Redis names of a key: its lock key and its fence
// counter. The lock key's name is also the channel on which its release
// is announced (pub/sub channels are not keys: the two never meet). They
// keep the key's text whole after the prefix, so its hash tag, if any,
// still picks the Cluster slot. Both are cut from one string, which costs
// one allocation instead of two.
func (r *Redis) names(key string) (lock, fence string) {
	p, tagged := r.opts.Prefix, hashTagged(key)
	all := p + "lock:" + tagged + p + "fence:" + tagged
	i := len(p) + len("lock:") + len(tagged)
	return all[:i], all[i:]
}

// hashTagged returns key unchanged if it has a Redis Cluster hash tag (a
// non-empty "{...}"), or else key wrapped in braces, so that every name
// derived from one key hashes to one slot.
func hashTagged(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key
		}
	}
	return "{" + key + "}"
}
