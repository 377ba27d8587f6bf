package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/batch"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/luascript"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

// lock is a lock held on a quorum of the nodes, watched by its locker's
// watchdog (distlock/internal/watchdog) from newLock until Release or
// loss: it renews the lease on every node every RenewEvery, and declares
// the lock lost when the validity runs out without a renewal that reached
// a quorum.
type lock struct {
	l     *Locker
	ks    *keySet
	token string // owner token: the value of every lock key on every node

	// State holds ks.keys with their fencing tokens, which never change,
	// and whether the lock is held, lost or released.
	lockstate.State

	// wd is the watchdog's record of the lock, its deadline included
	// (until when the lock is surely valid on a quorum, less StopMargin).
	wd watchdog.Entry
}

var _ distlock.Lock = (*lock)(nil)

// newLock returns a lock valid until deadline, watched.
func newLock(l *Locker, ks *keySet, token string, fences []int64, deadline time.Time) *lock {
	lk := &lock{
		l:     l,
		ks:    ks,
		token: token,
		State: lockstate.State{Keys: ks.keys, Fences: fences},
	}
	l.watchdog.Watch(&lk.wd, lk, deadline) // never closed: always watched
	return lk
}

// lose declares the lock lost with cause, unless it was lost or released
// already, and stops watching it.
func (lk *lock) lose(cause error) {
	lk.l.watchdog.Forget(&lk.wd)
	lk.Lose(cause)
}

// Refresh extends the lease of every key on every node that still holds
// it, all at once. It succeeds when a quorum of nodes extended it within
// the new validity. It returns distlock.ErrNotHeld, and declares the lock
// lost, when so many nodes refused (the key gone or held by another owner)
// that a quorum is out of reach; ErrNotHeld if the lock was lost or
// released before; and otherwise an error wrapping ErrUnavailable (too many
// nodes failed to answer, or answered too late): that is no loss while the
// validity lasts, and the watchdog tries again.
func (lk *lock) Refresh(ctx context.Context) error {
	if lk.Err() != nil {
		return distlock.ErrNotHeld
	}
	l := lk.l
	start := time.Now()
	deadline := l.leaseEnd(start)
	// A renewal goes out alone, not queued behind the batches of other
	// callers: on a loaded node a queue adds up to a round trip, and the
	// renewal is what keeps the lock valid.
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, node *batch.Batcher) (bool, error) {
		return node.RunAlone(ctx, luascript.Refresh, lk.ks.lockKeys, lk.token, l.leaseMillis).Bool()
	})
	extended, refused := 0, 0
	var failed []error
	for i, r := range replies {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Errorf("node %d: %w", i, r.err))
		case r.val:
			extended++
		default:
			refused++
		}
	}

	switch {
	case extended >= l.quorum && time.Now().Before(deadline):
		l.watchdog.Extend(&lk.wd, deadline)
		return nil
	case refused > len(l.nodes)-l.quorum:
		lk.lose(fmt.Errorf("%w: %d of %d nodes no longer hold %q for this owner",
			distlock.ErrLost, refused, len(l.nodes), lk.ks.keys))
		return distlock.ErrNotHeld
	}
	return fmt.Errorf("%w: refresh %q: %d of %d nodes extended the lease in time, %d needed: %w",
		ErrUnavailable, lk.ks.keys, extended, len(l.nodes), l.quorum, errors.Join(failed...))
}

// Release stops the watchdog, waits for it, then deletes the keys on every
// node that still holds them for this owner, all at once; a node that had
// lost them is left alone. It returns nil when a quorum of nodes still
// held every key; distlock.ErrNotHeld when fewer than a quorum did and the
// other nodes answered (the lease had run out on them: another holder may
// have come in between), or when it was called before; and an error
// wrapping ErrUnavailable when so many nodes failed to answer that it
// cannot tell. Keys on nodes that did not answer are freed when their lease
// runs out.
func (lk *lock) Release(ctx context.Context) error {
	if _, first := lk.MarkReleased(distlock.ErrNotHeld); !first {
		return distlock.ErrNotHeld
	}
	lk.l.watchdog.Unwatch(&lk.wd)

	l := lk.l
	held, failed := l.releaseAll(ctx, lk.ks, lk.token)
	switch {
	case held >= l.quorum:
		return nil
	case held+len(failed) >= l.quorum:
		return fmt.Errorf("%w: release %q: %d of %d nodes still held it, %d failed: %w",
			ErrUnavailable, lk.ks.keys, held, len(l.nodes), len(failed), errors.Join(failed...))
	}
	return fmt.Errorf("%w: only %d of %d nodes still held %q", distlock.ErrNotHeld, held, len(l.nodes), lk.ks.keys)
}

// Renew is Refresh, for the watchdog.
func (lk *lock) Renew(ctx context.Context) error { return lk.Refresh(ctx) }

// Expire declares the lock lost because its validity ran out, for the
// watchdog; last is the last failed renewal's error, or nil.
func (lk *lock) Expire(last error) { lk.lose(lockstate.Expired(distlock.ErrLost, lk.ks.keys, last)) }
