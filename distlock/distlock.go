package distlock

import (
	"context"
	"errors"
)

// Errors returned by every backend. Test for them with errors.Is: a backend
// may wrap them with detail, and joins them with ctx.Err() when the caller's
// context ended a wait.
var (
	// ErrNotAcquired is returned by Obtain when the keys could not be taken
	// before the context ended (joined with ctx.Err()), or at once by a
	// non-blocking attempt that found a key held.
	ErrNotAcquired = errors.New("distlock: not acquired")

	// ErrNotHeld is returned by Release and Refresh when the lock is no
	// longer held by this handle: it was released already, or its lease
	// expired and perhaps someone else holds the key now. Nothing of the
	// other holder's is touched.
	ErrNotHeld = errors.New("distlock: not held")

	// ErrLost is returned by Lock.Err once the lease was lost while the
	// handle still believed it held the lock: a renewal failed or found the
	// key gone or owned by someone else. Work protected by the lock must not
	// write after Lost is closed.
	ErrLost = errors.New("distlock: lock lost")
)

// Locker hands out locks on keys. Every backend (Redis, Postgres advisory
// locks, Redlock, file locks, ZooKeeper) implements it.
type Locker interface {
	// Obtain takes every key, all or nothing, waiting as long as ctx allows
	// (never bounded by the lease). It returns ErrNotAcquired, joined with
	// ctx.Err() when the context ended the wait, or an error from the
	// backend (for example a connection error) that is not ErrNotAcquired.
	// Duplicate keys are taken once.
	Obtain(ctx context.Context, keys ...string) (Lock, error)
}

// Lock is a held lock on one or more keys. Its methods are safe for
// concurrent use.
type Lock interface {
	// Token returns the fencing token issued for key when it was taken:
	// strictly greater than every token issued for that key before, or 0
	// if key is not part of this lock or the backend has no fencing.
	Token(key string) int64

	// Lost is closed when the lease is lost while held (see ErrLost). It is
	// not closed by Release.
	Lost() <-chan struct{}

	// Err returns nil while the lock is held, an error wrapping ErrLost
	// after Lost is closed (even after a later Release), and ErrNotHeld
	// after Release of a lock that was not lost. Check it right before a
	// write that the lock protects.
	Err() error

	// Refresh extends the lease of every key by the backend's TTL. It
	// returns ErrNotHeld if any key is no longer held by this handle.
	Refresh(ctx context.Context) error

	// Release gives every key up and stops any renewal. It returns
	// ErrNotHeld if a key was no longer held by this handle (its lease had
	// expired); keys still held are released all the same.
	Release(ctx context.Context) error
}
