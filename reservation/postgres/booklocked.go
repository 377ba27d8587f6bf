package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/reservation"
)

// rollbackTimeout bounds the rollback of a booking's transaction, which
// runs even when the request was cancelled: a transaction left open would
// hold its seats' locks.
const rollbackTimeout = 5 * time.Second

// XactLocker returns the seat locker of reservation.LockPostgresXact over
// the store. Its LockSeats begins a transaction and takes a transaction
// advisory lock (pg_advisory_xact_lock, see pglock.XactLock) on every seat
// in it, in one order, so that two bookings with overlapping seats cannot
// deadlock. The lease it returns is that transaction, a
// lease whose Tx is itself: the booking reads its seats through it, and its
// Book writes the booking with the statements of Store.Book and commits,
// releasing the locks. Lock and write commit or roll back together: there
// is no lease to run out, no watchdog, and no fencing token to check.
//
// The locks are keyed "{screening}:seat" in pglock's default namespace,
// the keys of the postgres strategy's session locks (reservation.SeatKey),
// so that the two Postgres strategies exclude each other on a seat.
//
// The cost is one pool connection and one open transaction per booking
// for its whole critical section, payment delay included. So that such
// bookings never take every connection and leave the store's other work
// waiting for as long as a payment takes, they may hold only all but a
// quarter of the pool at once (txSlotCount).
func (s *Store) XactLocker() reservation.SeatLocker { return xactLocker{s} }

type xactLocker struct{ s *Store }

var _ reservation.SeatLocker = xactLocker{}

// LockSeats takes a slot for a booking in a transaction, begins the
// transaction and takes the seats' locks in it, waiting as long as ctx
// allows. The wait is bounded twice: by ctx, which ends it with a cancel
// request, and by lock_timeout on the server, set to ctx's deadline in case
// the cancel request is lost (its error is 55P03, lock_not_available).
// When the wait for a lock ends, the error wraps context.DeadlineExceeded
// (or ctx's error) and reservation.ErrSeatBusy. A slot or a connection
// that did not come free within the wait is an overloaded database, not a
// busy seat (no seat was even tried): the error wraps
// reservation.ErrUnavailable, as it does when the database cannot be
// reached. On failure nothing is left open.
func (l xactLocker) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	busy := func(what string, cause error) error {
		return fmt.Errorf("postgres: lock seats: %s within the lock wait: %w (%w)", what, reservation.ErrSeatBusy, cause)
	}
	locked, err := l.begin(ctx, screeningID, seats)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = locked.Release(ctx)
		}
	}()

	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
	}
	if deadline, has := ctx.Deadline(); has {
		timeout := max(time.Until(deadline), time.Millisecond)
		_, err = locked.tx.Exec(ctx, `SELECT set_config('lock_timeout', $1, true)`, fmt.Sprintf("%dms", timeout.Milliseconds()))
	}
	if err == nil {
		err = pglock.XactLock(ctx, locked.tx, keys...)
	}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, busy(fmt.Sprintf("seats %v were not free", seats), ctx.Err())
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		return nil, busy(fmt.Sprintf("seats %v were not free", seats), context.DeadlineExceeded)
	default:
		return nil, translate("lock seats", err)
	}
	// The write's own row locks wait as long as the session allows, as in
	// Book: put lock_timeout back. ctx is only the lock wait; this belongs
	// to the transaction.
	if _, err := locked.tx.Exec(context.WithoutCancel(ctx), `SET LOCAL lock_timeout TO DEFAULT`); err != nil {
		return nil, translate("lock seats", err)
	}
	ok = true
	return locked, nil
}

// begin takes a slot for a booking in a transaction and begins one, for
// the seats of a screening. A slot or a connection that did not come free
// before ctx's deadline is an overloaded database, not a busy seat (no seat
// was even tried): the error wraps reservation.ErrUnavailable.
func (l xactLocker) begin(ctx context.Context, screeningID string, seats []string) (*lockedTx, error) {
	exhausted := func(what string) error {
		return fmt.Errorf("postgres: lock seats: %s within the lock wait: %w (%w)", what, reservation.ErrUnavailable, ctx.Err())
	}
	select {
	case l.s.txSlots <- struct{}{}:
	case <-ctx.Done():
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("postgres: lock seats: %w", ctx.Err())
		}
		return nil, exhausted(fmt.Sprintf("none of the %d connections for bookings in a transaction came free", cap(l.s.txSlots)))
	}
	tx, err := l.s.pool.Begin(ctx)
	if err != nil {
		<-l.s.txSlots
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil, exhausted("no pool connection came free")
		case ctx.Err() != nil:
			return nil, fmt.Errorf("postgres: lock seats: %w", ctx.Err())
		}
		return nil, translate("lock seats", err)
	}
	return &lockedTx{tx: tx, screeningID: screeningID, seats: slices.Clone(seats), slots: l.s.txSlots}, nil
}

var _ reservation.SeatTryLocker = xactLocker{}

// TryLockSeats is LockSeats without waiting for a lock: a best-available
// request skips the seats another request is taking. When a seat's lock is
// held it rolls back and returns a *reservation.SeatsBusyError naming the
// seats held. The slot and the connection are waited for as long as ctx
// allows, as in LockSeats: a full pool is no busy seat.
func (l xactLocker) TryLockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	locked, err := l.begin(ctx, screeningID, seats)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(seats))
	seatOf := make(map[string]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
		seatOf[keys[i]] = seat
	}
	held, err := pglock.XactTryLock(ctx, locked.tx, keys...)
	if err == nil && len(held) == 0 {
		return locked, nil
	}
	// A transaction lock cannot be given back before its transaction
	// ends: the rollback gives back those that were had.
	_ = locked.Release(ctx)
	if err != nil {
		return nil, translate("lock seats", err)
	}
	busy := make([]string, len(held))
	for i, key := range held {
		busy[i] = seatOf[key]
	}
	return nil, &reservation.SeatsBusyError{Seats: busy}
}

// lockedTx is a transaction that holds the advisory locks of seats of one
// screening: the lease of XactLocker.
type lockedTx struct {
	tx          pgx.Tx
	screeningID string
	seats       []string // sorted, as locked

	// slots is the store's txSlots, one of which this transaction holds
	// until it ends; freed (once) makes sure it is given back once.
	slots chan struct{}
	freed sync.Once
}

// free gives the transaction's slot back, once it has ended.
func (t *lockedTx) free() { t.freed.Do(func() { <-t.slots }) }

var (
	_ reservation.SeatLease = (*lockedTx)(nil)
	_ reservation.Tx        = (*lockedTx)(nil)
)

// Fence returns 0: the lock cannot be lost without the transaction, so the
// write needs no fencing token.
func (*lockedTx) Fence(string) int64 { return 0 }

// RaiseFences does nothing: the lock has no fencing tokens.
func (*lockedTx) RaiseFences(context.Context, map[string]int64) error { return nil }

// Lost returns nil: the lock cannot be lost while the transaction lives.
func (*lockedTx) Lost() <-chan struct{} { return nil }

// Tx returns the transaction itself: the booking reads and writes in it.
func (t *lockedTx) Tx() reservation.Tx { return t }

// Release rolls the transaction back, which releases the locks; after Book
// it has nothing to do. The request may be cancelled, so the rollback has
// a context of its own.
func (t *lockedTx) Release(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	err := t.tx.Rollback(ctx)
	t.free()
	if err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return translate("release seat locks", err)
	}
	return nil
}

// Book records w in the transaction with the statements of Store.Book, and
// commits, releasing the locks. It rolls back when it fails. It returns the
// errors of Store.Book, and reservation.ErrInvalid when w names a seat that
// was not locked or another screening.
func (t *lockedTx) Book(ctx context.Context, w reservation.Write) error {
	err := t.book(ctx, w)
	if err != nil {
		_ = t.Release(ctx)
	}
	return err
}

func (t *lockedTx) book(ctx context.Context, w reservation.Write) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if w.Booking.ScreeningID != t.screeningID {
		return fmt.Errorf("postgres: book locked: the write is for screening %q, the locks for %q: %w", w.Booking.ScreeningID, t.screeningID, reservation.ErrInvalid)
	}
	for _, seat := range w.Booking.Seats {
		if !slices.Contains(t.seats, seat) {
			return fmt.Errorf("postgres: book locked: seat %q was not locked: %w", seat, reservation.ErrInvalid)
		}
	}
	// Inside the transaction nothing commits before commit: a failure
	// here is never in doubt.
	if err := book(ctx, t.tx, w); err != nil {
		return guardError("book", err)
	}
	err := commit(ctx, t.tx, "book locked")
	t.free()
	return err
}

func (t *lockedTx) Idempotent(ctx context.Context, screeningID string, keyHash []byte) (reservation.IdempotencyRecord, error) {
	return idempotent(ctx, t.tx, screeningID, keyHash)
}

func (t *lockedTx) Booking(ctx context.Context, id string) (reservation.Booking, []byte, error) {
	return booking(ctx, t.tx, id)
}

func (t *lockedTx) SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error) {
	return seatsInUse(ctx, t.tx, screeningID, seats)
}

// CreateHold records w in the transaction with the statements of
// Store.CreateHold, and commits, releasing the locks. It rolls back when it
// fails. It returns the errors of Store.CreateHold, and
// reservation.ErrInvalid when w is not for the locked seats.
func (t *lockedTx) CreateHold(ctx context.Context, w reservation.HoldWrite) (reservation.Hold, error) {
	h, err := t.createHold(ctx, w)
	if err != nil {
		_ = t.Release(ctx)
	}
	return h, err
}

func (t *lockedTx) createHold(ctx context.Context, w reservation.HoldWrite) (reservation.Hold, error) {
	if err := w.Validate(); err != nil {
		return reservation.Hold{}, err
	}
	if w.Hold.ScreeningID != t.screeningID || !slices.Equal(w.Hold.Seats, t.seats) {
		return reservation.Hold{}, fmt.Errorf("postgres: hold locked: the hold is not for the locked seats: %w", reservation.ErrInvalid)
	}
	h, err := createHold(ctx, t.tx, w)
	if err != nil {
		return reservation.Hold{}, err
	}
	err = t.tx.Commit(ctx)
	t.free()
	return h, translate("hold locked", err)
}
