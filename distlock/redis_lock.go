package distlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/luascript"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

// redisLock is a lock on Redis keys: held once acquire succeeded, and
// watched by its locker's watchdog from then until Release or loss.
//
// Everything one acquisition sends to Redis is built once, in newLock, and
// reused by every attempt, renewal and the release: the names of the keys
// and the scripts' arguments.
type redisLock struct {
	r *Redis

	// names holds, one after the other, n caller's keys without duplicates,
	// their n lock keys and their n fence counters: names[n+i] is the lock
	// key of names[i]. keys, lockKeys and acquireKeys are views of it.
	names       []string
	keys        []string // the caller's keys, in order
	lockKeys    []string // KEYS of refresh.lua and release.lua (internal/luascript); also the release channels
	acquireKeys []string // KEYS of acquire.lua: the lock keys, then the fence counters

	// argv is the ARGV of the scripts: the owner token, the lease in
	// milliseconds and the fence counters' expiry in milliseconds for
	// acquire.lua, the first two for refresh.lua, the token alone for
	// release.lua. Its values are boxed in interfaces once, not on every
	// command.
	argv  [3]any
	token string // owner token: the value of every lock key

	// fence holds the fencing token of a lock on one key, the common case,
	// so that State.Fences needs no allocation of its own.
	fence [1]int64

	// State holds keys (State.Keys is keys) and their fencing tokens,
	// set once by acquire, and gives Token, Lost and Err.
	lockstate.State

	// wd is the watchdog's record of the lock, its lease's deadline
	// included (until when the lease is surely valid on the server, less
	// StopMargin).
	wd watchdog.Entry
}

var _ Lock = (*redisLock)(nil)

// newLock prepares a lock on keys, with a fresh owner token. It does no
// I/O: acquire takes the keys.
func (r *Redis) newLock(keys []string) (*redisLock, error) {
	if len(keys) == 0 {
		return nil, errors.New("distlock: Obtain needs at least one key")
	}
	names := make([]string, 0, 3*len(keys))
	for _, k := range keys {
		if !slices.Contains(names, k) { // a lock has a handful of keys: no map needed
			names = append(names, k)
		}
	}
	n := len(names)
	names = names[:3*n]
	for i, k := range names[:n] {
		names[n+i], names[2*n+i] = r.names(k)
	}
	l := &redisLock{
		r:           r,
		names:       names,
		keys:        names[:n],
		lockKeys:    names[n : 2*n],
		acquireKeys: names[n:],
		token:       lockstate.OwnerToken(),
	}
	l.Keys = l.keys
	l.argv = [3]any{l.token, r.leaseMillis, r.fenceMillis}
	return l, nil
}

// takeFences reads a reply of acquire.lua. When every key was taken it
// stores their fencing tokens in l and returns index -1; when a key was
// held it returns which one, and what is left of its lease.
func (l *redisLock) takeFences(reply any) (heldKey, error) {
	switch reply := reply.(type) {
	case int64: // the one key is taken: this is its fencing token
		if len(l.keys) == 1 && reply > 0 {
			l.fence[0] = reply
			l.Fences = l.fence[:]
			return heldKey{index: -1}, nil
		}
	case []any: // n tokens, or {0, i, pttl}
		ints := make([]int64, len(reply))
		for i, v := range reply {
			n, ok := v.(int64)
			if !ok {
				return heldKey{}, fmt.Errorf("distlock: acquire %q: unexpected reply %v", l.keys, reply)
			}
			ints[i] = n
		}
		if len(ints) == 3 && ints[0] == 0 && ints[1] >= 1 && int(ints[1]) <= len(l.keys) {
			return heldKey{index: int(ints[1]) - 1, pttl: time.Duration(ints[2]) * time.Millisecond}, nil
		}
		if len(ints) == len(l.keys) && !slices.Contains(ints, 0) {
			l.Fences = ints
			return heldKey{index: -1}, nil
		}
	}
	return heldKey{}, fmt.Errorf("distlock: acquire %q: unexpected reply %v", l.keys, reply)
}

// leaseEnd returns until when a lease set by a command sent at sent is
// surely still valid, less the holder's StopMargin. The server started the
// lease after we sent the command, so sent+TTL is early enough as long as
// both clocks run at the same rate; one percent is taken off for clocks
// that do not.
func (r *Redis) leaseEnd(sent time.Time) time.Time {
	return r.lease.End(sent)
}

// Expire declares the lock lost because its lease ran out, for the
// watchdog; last is the last failed renewal's error, or nil.
func (l *redisLock) Expire(last error) { l.lose(lockstate.Expired(ErrLost, l.keys, last)) }

// lose declares the lock lost with cause, unless it was lost or released
// already, and stops watching it.
func (l *redisLock) lose(cause error) {
	l.r.watchdog.Forget(&l.wd)
	l.Lose(cause)
}

// Refresh extends the lease of every key by the TTL, in one round trip. It
// returns ErrNotHeld, and declares the lock lost, if any key is gone or
// held by another owner; ErrNotHeld if the lock was lost or released
// before; or an error from Redis, wrapped.
func (l *redisLock) Refresh(ctx context.Context) error {
	if l.Err() != nil {
		return ErrNotHeld
	}
	return l.Renew(ctx)
}

// Renew is Refresh without the first check, for the watchdog, which only
// renews locks it still watches.
func (l *redisLock) Renew(ctx context.Context) error {
	sent := time.Now()
	ok, err := l.r.scripts.Run(ctx, luascript.Refresh, l.lockKeys, l.argv[:2]...).Bool()
	if err != nil {
		return fmt.Errorf("distlock: refresh %q: %w", l.keys, err)
	}
	if !ok {
		l.lose(fmt.Errorf("%w: a key of %q is gone or held by another owner", ErrLost, l.keys))
		return ErrNotHeld
	}
	l.r.watchdog.Extend(&l.wd, l.r.leaseEnd(sent))
	return nil
}

// Release stops the watchdog's work on the lock, waits for a renewal in
// flight, then deletes every key that still holds this lock's owner token
// and wakes the waiters on them, if any, in one round trip. It returns ErrNotHeld
// if it was called before or if some key was no longer held (the others
// are released all the same), or an error from Redis, wrapped: the keys
// are then freed when their lease runs out.
func (l *redisLock) Release(ctx context.Context) error {
	if _, first := l.MarkReleased(ErrNotHeld); !first {
		return ErrNotHeld
	}
	l.r.watchdog.Unwatch(&l.wd)

	n, err := l.r.scripts.Run(ctx, luascript.Release, l.lockKeys, l.argv[:1]...).Int()
	if err != nil {
		return fmt.Errorf("distlock: release %q: %w", l.keys, err)
	}
	if n != len(l.keys) {
		return fmt.Errorf("%w: %d of the %d keys of %q had expired", ErrNotHeld, len(l.keys)-n, len(l.keys), l.keys)
	}
	return nil
}
