package pglock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

// lock is a set of keys held by one Postgres session.
//
// Its locker's watchdog (distlock/internal/watchdog) watches it from
// newLock until Release or loss: it asks the server every RenewEvery
// whether the session still holds the keys, which also keeps the session
// from going idle for the TTL, and declares the lock lost when the session
// has ended, or when the lease's deadline passes without a successful
// check. A check that cannot finish by the deadline is cut off, which
// closes the connection: a loss.
type lock struct {
	locker *Locker
	ks     *keySet

	// connMu serialises the use of conn, which runs one statement at a
	// time: a check by the watchdog, a Refresh, the Release.
	connMu sync.Mutex
	conn   *pgxpool.Conn // nil once Release gave it back

	// State holds ks.keys with their fencing tokens, which never change,
	// and whether the lock is held, lost or released; it gives Token, Lost
	// and Err, which answer at once: no lock held during I/O guards it.
	lockstate.State

	// wd is the watchdog's record of the lock, its deadline included
	// (until when the server surely keeps the session, less StopMargin;
	// zero without a TTL).
	wd watchdog.Entry
}

var _ distlock.Lock = (*lock)(nil)

func newLock(l *Locker, conn *pgxpool.Conn, ks *keySet, fences []int64, sent time.Time) *lock {
	lk := &lock{
		locker: l,
		ks:     ks,
		conn:   conn,
		State:  lockstate.State{Keys: ks.keys, Fences: fences},
	}
	l.watchdog.Watch(&lk.wd, lk, l.leaseEnd(sent)) // never closed: always watched
	return lk
}

// leaseEnd returns until when a session that last ran a statement sent at
// sent is surely still alive on the server, less StopMargin: the server's
// idle timer started after it received the statement. One percent is taken
// off for clocks that run at different rates.
func (l *Locker) leaseEnd(sent time.Time) time.Time {
	if l.opts.TTL <= 0 {
		return time.Time{}
	}
	return l.lease.End(sent)
}

// lose declares the lock lost with cause, unless it was lost or released
// already, and stops watching it.
func (lk *lock) lose(cause error) {
	lk.locker.watchdog.Forget(&lk.wd)
	lk.Lose(cause)
}

// Refresh asks the server whether this session still holds every key,
// which also restarts the session's idle timer (the lease). It returns
// distlock.ErrNotHeld, and declares the lock lost, when the session has
// ended or holds a key no more; ErrNotHeld if the lock was lost or released
// before; or an error from Postgres, wrapped, when the session is alive but
// the question failed.
func (lk *lock) Refresh(ctx context.Context) error {
	lk.connMu.Lock()
	defer lk.connMu.Unlock()
	if lk.Err() != nil || lk.conn == nil {
		return distlock.ErrNotHeld
	}
	sent := time.Now()
	var n int
	err := lk.conn.QueryRow(ctx, heldSQL, lk.ks.ids).Scan(&n)
	switch {
	case err != nil && lk.conn.Conn().IsClosed():
		// A session does not come back: its locks went with it.
		lk.lose(fmt.Errorf("%w: the session holding %q ended: %w", distlock.ErrLost, lk.ks.keys, err))
		return fmt.Errorf("%w: the session ended: %w", distlock.ErrNotHeld, err)
	case err != nil:
		return fmt.Errorf("pglock: refresh %q: %w", lk.ks.keys, err)
	case n != len(lk.ks.ids):
		lk.lose(fmt.Errorf("%w: the session holds %d of the %d keys of %q", distlock.ErrLost, n, len(lk.ks.ids), lk.ks.keys))
		return distlock.ErrNotHeld
	}
	if lk.Err() == nil {
		lk.locker.watchdog.Extend(&lk.wd, lk.locker.leaseEnd(sent))
	}
	return nil
}

// Release unlocks every key and gives the connection back to the pool, in
// one round trip, and stops watching it. It returns distlock.ErrNotHeld if
// the lock was lost or released before, or if the session held a key no
// more. When anything is in doubt the connection is closed instead of
// pooled, which frees whatever the session held.
func (lk *lock) Release(ctx context.Context) error {
	lostErr, first := lk.MarkReleased(distlock.ErrNotHeld)
	if !first {
		return fmt.Errorf("%w: released already", distlock.ErrNotHeld)
	}
	lk.locker.watchdog.Unwatch(&lk.wd)

	lk.connMu.Lock()
	defer lk.connMu.Unlock()
	conn := lk.conn
	lk.conn = nil
	if lostErr != nil {
		discard(conn)
		return fmt.Errorf("%w: the lock was lost: %v", distlock.ErrNotHeld, lostErr)
	}

	b := &pgx.Batch{}
	b.Queue(unlockSQL, lk.ks.ids)
	b.Queue(resetLeaseSQL)
	br := conn.SendBatch(ctx, b)
	var n int
	err := br.QueryRow().Scan(&n)
	if err := errors.Join(err, br.Close()); err != nil {
		closed := conn.Conn().IsClosed()
		discard(conn)
		if closed {
			return fmt.Errorf("%w: the session of %q ended: %w", distlock.ErrNotHeld, lk.ks.keys, err)
		}
		return fmt.Errorf("pglock: release %q (closed the session instead): %w", lk.ks.keys, err)
	}
	if n != len(lk.ks.ids) {
		discard(conn)
		return fmt.Errorf("%w: the session held %d of the %d keys of %q", distlock.ErrNotHeld, n, len(lk.ks.ids), lk.ks.keys)
	}
	conn.Release()
	return nil
}

// Renew is Refresh, for the watchdog.
func (lk *lock) Renew(ctx context.Context) error { return lk.Refresh(ctx) }

// Expire declares the lock lost because its lease ran out, for the
// watchdog; last is the last failed check's error, or nil.
func (lk *lock) Expire(last error) { lk.lose(lockstate.Expired(distlock.ErrLost, lk.ks.keys, last)) }
