// Package redislock is yours to write: a distributed lock on one Redis
// server (docs/workshop/05-redis-lock.md, "Write it yourself"), the
// distlock.Locker that the API's strategy lab-redis uses. Fill in the
// TODOs, then grade it:
//
//	GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/redislock
//
// The grader is distlock's own conformance suite (distlock/distlocktest),
// the one every backend of the project passes. It runs in stages and stops
// at the first that fails, saying what it asks for:
//
//  1. basics: Obtain waits for a held key, takes several keys all or
//     nothing (one Lua script), Release frees them.
//  2. ownership: only the owner releases or refreshes (compare the value
//     and delete in one script); every holder of a key gets a larger
//     fencing token than the one before.
//  3. leases: a key whose holder vanished frees itself (PX); a live holder
//     renews its lease (a goroutine the lock owns, every TTL/3) and closes
//     Lost when it cannot.
//
// The redisteps ladder (docs/workshop/redisteps) builds each of these one
// step at a time, and its last step is the whole of it.
package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
)

// errTODO is what the parts still to write return.
var errTODO = errors.New("redislock: not written yet (a TODO in docs/workshop/write/redislock)")

// Options configure a Locker. The zero value must work.
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

// LockKey returns the Redis key that holds the lock on key. The grader
// deletes it to play a server that lost the lock.
func (l *Locker) LockKey(key string) string { return l.opts.Prefix + "lock:" + key }

// FenceKey returns the Redis key of key's fencing counter. Let it expire
// (leave nothing behind): a token that is also never below the server's
// clock (TIME, in microseconds) stays larger than every earlier one when
// its counter is gone.
func (l *Locker) FenceKey(key string) string { return l.opts.Prefix + "fence:" + key }

// Obtain takes every key, all or nothing, trying again until ctx ends:
// then it returns an error that wraps both distlock.ErrNotAcquired and
// ctx.Err() (errors.Join).
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	// TODO: one random owner value per lock; a Lua script that takes
	// every lock key with SET PX for that owner if none is held, and
	// returns a fencing token per key; wait a little and try again while
	// a key is held. Then start the lease renewal.
	return nil, errTODO
}

// Lock is a held lock. Its methods must be safe for concurrent use.
type Lock struct {
	// TODO: the locker, the lock keys, the owner value, the tokens; the
	// Lost channel; what the renewal goroutine needs to be stopped and
	// waited for; the state Err reports, guarded by a mutex.
}

var _ distlock.Lock = (*Lock)(nil)

// Token returns key's fencing token, or 0 if key is not part of the lock.
func (lk *Lock) Token(key string) int64 {
	// TODO
	return 0
}

// Lost is closed when the lease is lost while held (a renewal found a key
// gone or someone else's, or the lease ran out unrenewed).
func (lk *Lock) Lost() <-chan struct{} {
	// TODO
	return nil
}

// Err returns nil while held, an error wrapping distlock.ErrLost after a
// loss (even after Release), and distlock.ErrNotHeld after a Release of a
// lock that was not lost.
func (lk *Lock) Err() error {
	// TODO
	return errTODO
}

// Refresh extends the lease of every key by the TTL if this lock still
// holds them all (one script); if not, it returns distlock.ErrNotHeld and
// the lease is lost.
func (lk *Lock) Refresh(ctx context.Context) error {
	// TODO
	return errTODO
}

// Release deletes the keys this lock still owns (one script: compare,
// then delete) and stops the renewal. It returns distlock.ErrNotHeld if a
// key was no longer this lock's.
func (lk *Lock) Release(ctx context.Context) error {
	// TODO
	return errTODO
}
