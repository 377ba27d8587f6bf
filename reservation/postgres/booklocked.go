package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/reservation"
)

var _ reservation.TxBooker = (*Store)(nil)

// rollbackTimeout bounds the rollback of a booking's transaction, which
// runs even when the request was cancelled: a transaction left open would
// hold its seats' locks.
const rollbackTimeout = 5 * time.Second

// BookLocked runs a booking's critical section in one transaction that
// holds a transaction advisory lock (pg_advisory_xact_lock, see
// pglock.XactLock) on every seat, taken in one order, so that two bookings
// with overlapping seats cannot deadlock. critical reads through the
// transaction; its Write is recorded by the statements of Book in the same
// transaction, which then commits, releasing the locks. Lock and write
// commit or roll back together: there is no lease, no watchdog, and no
// fencing token to check.
//
// The locks are keyed "{screening}:seat" in pglock's default namespace,
// the keys of the postgres strategy's session locks (reservation.SeatKey), so
// that the two Postgres strategies exclude each other on a seat.
//
// The connection and the locks must be had within lockWait, else the error
// wraps reservation.ErrSeatBusy. The wait is bounded twice: by a context
// deadline, which ends it with a cancel request, and by lock_timeout on
// the server, in case the cancel request is lost (its error is 55P03,
// lock_not_available). The cost is one pool connection and one open
// transaction per booking for its whole critical section, payment delay
// included: the pool size bounds how many such bookings run at once.
//
// It returns the error of critical as it is, the errors of Book,
// reservation.ErrInvalid when the Write names a seat that was not locked or
// another screening, reservation.ErrUnavailable when the database cannot be
// reached, or an error wrapping ctx.Err() when ctx ended. Nothing is
// written when it fails.
func (s *Store) BookLocked(ctx context.Context, screeningID string, seats []string, lockWait time.Duration, critical reservation.CriticalSection) error {
	tx, err := s.lockSeats(ctx, screeningID, seats, lockWait)
	if err != nil {
		return err
	}
	defer func() {
		// After Commit, a no-op. The request may be cancelled, so the
		// rollback has a context of its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_ = tx.Rollback(rctx)
	}()

	w, err := critical(ctx, txReader{tx})
	if err != nil || w == nil {
		return err
	}
	if err := w.Validate(); err != nil {
		return err
	}
	if w.Booking.ScreeningID != screeningID {
		return fmt.Errorf("postgres: book locked: the write is for screening %q, the locks for %q: %w", w.Booking.ScreeningID, screeningID, reservation.ErrInvalid)
	}
	for _, seat := range w.Booking.Seats {
		if !slices.Contains(seats, seat) {
			return fmt.Errorf("postgres: book locked: seat %q was not locked: %w", seat, reservation.ErrInvalid)
		}
	}
	if err := book(ctx, tx, *w); err != nil {
		return err
	}
	return translate("book locked", tx.Commit(ctx))
}

// lockSeats begins a transaction and takes the seats' locks in it within
// lockWait, or, when lockWait is 0, without waiting (see trySeats). On
// success the caller owns tx; on failure it is rolled back.
func (s *Store) lockSeats(ctx context.Context, screeningID string, seats []string, lockWait time.Duration) (pgx.Tx, error) {
	if lockWait <= 0 {
		return s.trySeats(ctx, screeningID, seats)
	}
	deadline := time.Now().Add(lockWait)
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	busy := func(what string) error {
		return fmt.Errorf("postgres: book locked: %s within the lock wait of %v: %w", what, lockWait, reservation.ErrSeatBusy)
	}

	// Every booking of this strategy holds a connection for its whole
	// critical section, so a full pool is bookings in their critical
	// sections: waiting for a connection is part of waiting for the locks.
	tx, err := s.pool.Begin(wait)
	if err != nil {
		if ctx.Err() == nil && wait.Err() != nil {
			return nil, busy("no connection came free")
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("postgres: book locked: %w", ctx.Err())
		}
		return nil, translate("book locked", err)
	}
	ok := false
	defer func() {
		if !ok {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			defer cancel()
			_ = tx.Rollback(rctx)
		}
	}()

	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
	}
	timeout := max(time.Until(deadline), time.Millisecond)
	_, err = tx.Exec(wait, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", timeout.Milliseconds()))
	if err == nil {
		err = pglock.XactLock(wait, tx, keys...)
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, fmt.Errorf("postgres: book locked: %w", ctx.Err())
	case wait.Err() != nil, errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		return nil, busy(fmt.Sprintf("seats %v were not free", seats))
	default:
		return nil, translate("book locked", err)
	}
	// The write's own row locks wait as long as the session allows, as in
	// Book: put lock_timeout back.
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout TO DEFAULT`); err != nil {
		return nil, translate("book locked", err)
	}
	ok = true
	return tx, nil
}

// trySeats begins a transaction and tries the seats' locks in it without
// waiting for any: a best-available request skips seats that another
// request is taking. When a lock is held it rolls back and returns a
// *reservation.SeatsBusyError naming those seats. The connection is waited
// for as long as ctx allows: a full pool is no busy seat.
func (s *Store) trySeats(ctx context.Context, screeningID string, seats []string) (pgx.Tx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, translate("book locked", err)
	}
	keys := make([]string, len(seats))
	seatOf := make(map[string]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
		seatOf[keys[i]] = seat
	}
	held, err := pglock.XactTryLock(ctx, tx, keys...)
	if err == nil && len(held) == 0 {
		return tx, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = tx.Rollback(rctx)
	if err != nil {
		return nil, translate("book locked", err)
	}
	busy := make([]string, len(held))
	for i, key := range held {
		busy[i] = seatOf[key]
	}
	return nil, &reservation.SeatsBusyError{Seats: busy}
}

// txReader reads through the transaction that holds a booking's locks.
type txReader struct{ tx pgx.Tx }

var _ reservation.Reader = txReader{}

func (r txReader) TakenSeats(ctx context.Context, screeningID string, seats []string) ([]string, error) {
	return takenSeats(ctx, r.tx, screeningID, seats)
}

func (r txReader) Idempotent(ctx context.Context, screeningID string, keyHash []byte) (reservation.IdempotencyRecord, error) {
	return idempotent(ctx, r.tx, screeningID, keyHash)
}

func (r txReader) SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error) {
	return seatsInUse(ctx, r.tx, screeningID, seats)
}

func (r txReader) Booking(ctx context.Context, id string) (reservation.Booking, []byte, error) {
	return booking(ctx, r.tx, id)
}
