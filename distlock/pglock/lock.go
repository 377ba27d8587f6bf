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
)

// lock is a set of keys held by one Postgres session.
//
// Its watchdog is one goroutine, started by newLock and ended by Release
// (which closes stop and waits for done). It asks the server every
// RenewEvery whether the session still holds the keys, which also keeps the
// session from going idle for the TTL; it declares the lock lost when the
// session has ended, or when the lease's deadline passes without a
// successful check.
type lock struct {
	locker *Locker
	ks     *keySet
	stop   chan struct{} // closed by Release: the watchdog returns
	done   chan struct{} // closed by the watchdog when it returns

	// connMu serialises the use of conn, which runs one statement at a
	// time: a check by the watchdog, a Refresh, the Release. It is taken
	// before mu, never after.
	connMu sync.Mutex
	conn   *pgxpool.Conn // nil once Release gave it back

	// State holds ks.keys with their fencing tokens, which never change,
	// and whether the lock is held, lost or released; it gives Token, Lost
	// and Err, which answer at once: no lock held during I/O guards it.
	lockstate.State

	// mu protects deadline; it is never held during I/O.
	mu       sync.Mutex
	deadline time.Time // until when the server surely keeps the session, less StopMargin; zero without a TTL
}

var _ distlock.Lock = (*lock)(nil)

func newLock(l *Locker, conn *pgxpool.Conn, ks *keySet, fences []int64, sent time.Time) *lock {
	lk := &lock{
		locker: l,
		ks:     ks,
		conn:   conn,
		State:  lockstate.State{Keys: ks.keys, Fences: fences},
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	lk.deadline = l.leaseEnd(sent)
	go lk.watch()
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
// already.
func (lk *lock) lose(cause error) { lk.Lose(cause) }

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
		lk.mu.Lock()
		lk.deadline = lk.locker.leaseEnd(sent)
		lk.mu.Unlock()
	}
	return nil
}

// Release unlocks every key and gives the connection back to the pool, in
// one round trip, and stops the watchdog. It returns distlock.ErrNotHeld if
// the lock was lost or released before, or if the session held a key no
// more. When anything is in doubt the connection is closed instead of
// pooled, which frees whatever the session held.
func (lk *lock) Release(ctx context.Context) error {
	lostErr, first := lk.MarkReleased(distlock.ErrNotHeld)
	if !first {
		return fmt.Errorf("%w: released already", distlock.ErrNotHeld)
	}
	close(lk.stop)
	<-lk.done

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

// watch is the watchdog goroutine; see lock.
func (lk *lock) watch() {
	defer close(lk.done)
	var renew <-chan time.Time
	if every := lk.locker.opts.RenewEvery; every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		renew = t.C
	}
	var expiry <-chan time.Time
	var expiryTimer *time.Timer
	if deadline := lk.leaseDeadline(); !deadline.IsZero() {
		expiryTimer = time.NewTimer(time.Until(deadline))
		defer expiryTimer.Stop()
		expiry = expiryTimer.C
	}
	for {
		select {
		case <-lk.stop:
			return
		case <-expiry:
			if left := time.Until(lk.leaseDeadline()); left > 0 {
				expiryTimer.Reset(left)
				continue
			}
			lk.lose(fmt.Errorf("%w: the lease of %q ran out without a check", distlock.ErrLost, lk.ks.keys))
			return
		case <-renew:
			if errors.Is(lk.check(), distlock.ErrNotHeld) {
				return // lost
			}
		}
	}
}

// check runs one Refresh for the watchdog, bounded by the lease's deadline
// (or by RenewEvery without a TTL): a check that cannot finish by then
// cuts the connection, which is a loss, and a loss that the deadline
// declares on time.
func (lk *lock) check() error {
	deadline := lk.leaseDeadline()
	if deadline.IsZero() {
		deadline = time.Now().Add(max(lk.locker.opts.RenewEvery, time.Second))
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return lk.Refresh(ctx)
}

func (lk *lock) leaseDeadline() time.Time {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.deadline
}
