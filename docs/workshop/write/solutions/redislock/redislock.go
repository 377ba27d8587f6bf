// Package redislock is a solution of the write-it-yourself Redis lock lab
// (docs/workshop/05-redis-lock.md): a distlock.Locker on one Redis server
// that takes several keys all or nothing, releases only its own keys, hands
// out fencing tokens, renews its lease while held and says when it lost it.
// It is the last step of the redisteps ladder, whole; the project's own
// distlock.Redis adds waiting by push instead of polling, shared round trips
// and one watchdog for every lock.
package redislock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
)

// acquire takes every lock key in KEYS[1..n] for the owner ARGV[1], with a
// lease of ARGV[2] ms, or none if one is held. It returns one fencing token
// per key, or 0. A token is the larger of the key's counter plus one and
// the server's clock in microseconds, so a counter that expired or was lost
// never gives out a token smaller than an earlier one: the counter can
// expire with the lease of its key (ARGV[3] ms).
var acquire = redis.NewScript(`
local n = #KEYS / 2
for i = 1, n do
  if redis.call("EXISTS", KEYS[i]) == 1 then return 0 end
end
local t = redis.call("TIME")
local now = t[1] * 1000000 + t[2]
local tokens = {}
for i = 1, n do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
  local token = math.max(redis.call("INCR", KEYS[n + i]), now)
  redis.call("SET", KEYS[n + i], string.format("%.0f", token), "PX", ARGV[3])
  tokens[i] = string.format("%.0f", token)
end
return tokens
`)

// release deletes the keys still owned by ARGV[1] and returns how many
// were not: 0 when every key was still held.
var release = redis.NewScript(`
local missing = 0
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("DEL", KEYS[i])
  else
    missing = missing + 1
  end
end
return missing
`)

// refresh extends the lease of every key to ARGV[2] ms if ARGV[1] still
// owns them all, and returns 1; else 0, extending nothing.
var refresh = redis.NewScript(`
for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1
`)

// Options configure a Locker. The zero value works.
type Options struct {
	// TTL is the lease of a lock (default 10s), renewed every TTL/3.
	TTL time.Duration
	// Prefix goes before every key the Locker writes in Redis.
	Prefix string
	// NoRenewal stops the renewal of leases: a lock then runs out after
	// one TTL, as a crashed holder's would. For tests.
	NoRenewal bool
}

// Locker takes locks on keys of one Redis server.
type Locker struct {
	c    *redis.Client
	opts Options
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker on c.
func New(c *redis.Client, opts Options) *Locker {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Second
	}
	return &Locker{c: c, opts: opts}
}

// LockKey returns the Redis key that holds the lock on key.
func (l *Locker) LockKey(key string) string { return l.opts.Prefix + "lock:" + key }

// FenceKey returns the Redis key of key's fencing counter.
func (l *Locker) FenceKey(key string) string { return l.opts.Prefix + "fence:" + key }

// Obtain takes every key, all or nothing, trying again until ctx ends.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	owner := uuid.NewString()
	redisKeys := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		redisKeys = append(redisKeys, l.LockKey(k))
	}
	for _, k := range keys {
		redisKeys = append(redisKeys, l.FenceKey(k))
	}
	for {
		start := time.Now()
		res, err := acquire.Run(ctx, l.c, redisKeys, owner, l.opts.TTL.Milliseconds(), 2*l.opts.TTL.Milliseconds()).Result()
		if err != nil {
			if ctx.Err() != nil {
				return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
			}
			return nil, fmt.Errorf("redislock: acquire: %w", err)
		}
		if list, ok := res.([]any); ok {
			tokens, err := parseTokens(keys, list)
			if err != nil {
				return nil, err
			}
			return l.held(keys, redisKeys[:len(keys)], owner, tokens, start), nil
		}
		// Held by someone: look again a little later, at a random moment so
		// that waiters do not all come back at once.
		select {
		case <-time.After(5*time.Millisecond + rand.N(20*time.Millisecond)):
		case <-ctx.Done():
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
	}
}

// parseTokens reads the fencing tokens the acquire script returned, one
// per key, as decimal strings (Lua would write numbers this large in
// exponent form).
func parseTokens(keys []string, list []any) (map[string]int64, error) {
	if len(list) != len(keys) {
		return nil, fmt.Errorf("redislock: acquire returned %d tokens for %d keys", len(list), len(keys))
	}
	tokens := make(map[string]int64, len(keys))
	for i, v := range list {
		s, _ := v.(string)
		tok, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redislock: fencing token %q: %w", v, err)
		}
		tokens[keys[i]] = tok
	}
	return tokens, nil
}

// Lock is a held lock. A watchdog goroutine, which the lock owns and
// Release stops, renews its lease every TTL/3 and closes lost when it
// cannot.
type Lock struct {
	l         *Locker
	redisKeys []string // the lock keys in Redis
	owner     string   // the value of every lock key while this lock holds it
	tokens    map[string]int64

	lost     chan struct{} // closed once the lease is lost
	stop     chan struct{} // closed by the first Release: the watchdog returns
	stopOnce sync.Once
	done     chan struct{} // closed when the watchdog has returned

	mu sync.Mutex // guards the fields below
	// validUntil is when the lease runs out by this process's clock,
	// counted from before the request that took or renewed it.
	validUntil time.Time
	err        error // nil while held; ErrLost or ErrNotHeld after
}

var _ distlock.Lock = (*Lock)(nil)

func (l *Locker) held(keys, redisKeys []string, owner string, tokens map[string]int64, start time.Time) *Lock {
	lk := &Lock{
		l: l, redisKeys: redisKeys, owner: owner, tokens: tokens,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		validUntil: start.Add(l.opts.TTL),
	}
	go lk.watchdog()
	return lk
}

// watchdog renews the lease every TTL/3 until Release or a loss. Without
// renewal (Options.NoRenewal) it only declares the loss when the lease
// runs out.
func (lk *Lock) watchdog() {
	defer close(lk.done)
	ttl := lk.l.opts.TTL
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-lk.stop:
			return
		case <-tick.C:
		}
		if !lk.l.opts.NoRenewal {
			ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
			err := lk.Refresh(ctx)
			cancel()
			if errors.Is(err, distlock.ErrNotHeld) {
				return // Refresh declared the loss
			}
		}
		lk.mu.Lock()
		expired := time.Now().After(lk.validUntil)
		lk.mu.Unlock()
		if expired {
			lk.markLost()
			return
		}
	}
}

// markLost records the loss of the lease and closes lost, once.
func (lk *Lock) markLost() {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.err == nil {
		lk.err = distlock.ErrLost
		close(lk.lost)
	}
}

// Token returns key's fencing token, or 0 if key is not part of the lock.
func (lk *Lock) Token(key string) int64 { return lk.tokens[key] }

// Lost is closed when the lease is lost while held.
func (lk *Lock) Lost() <-chan struct{} { return lk.lost }

// Err returns nil while held, ErrLost after a loss, ErrNotHeld after a
// Release.
func (lk *Lock) Err() error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.err
}

// Refresh extends the lease of every key by the TTL, if this lock still
// holds them all; if not, the lease is lost.
func (lk *Lock) Refresh(ctx context.Context) error {
	start := time.Now()
	ok, err := refresh.Run(ctx, lk.l.c, lk.redisKeys, lk.owner, lk.l.opts.TTL.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("redislock: refresh: %w", err)
	}
	if ok != 1 {
		lk.markLost()
		return distlock.ErrNotHeld
	}
	lk.mu.Lock()
	lk.validUntil = start.Add(lk.l.opts.TTL)
	lk.mu.Unlock()
	return nil
}

// Release deletes the keys this lock still holds and stops the watchdog.
func (lk *Lock) Release(ctx context.Context) error {
	lk.mu.Lock()
	if lk.err == nil {
		lk.err = distlock.ErrNotHeld
	}
	lk.mu.Unlock()
	lk.stopOnce.Do(func() { close(lk.stop) })
	<-lk.done
	missing, err := release.Run(ctx, lk.l.c, lk.redisKeys, lk.owner).Int()
	if err != nil {
		return fmt.Errorf("redislock: release: %w", err)
	}
	if missing > 0 {
		return distlock.ErrNotHeld
	}
	return nil
}
