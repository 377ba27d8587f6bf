// The guarded write of a booking: Store.Book, one statement (book_seats,
// migration 0009), and how its refusals become the domain's errors.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seatlock/seatlock/reservation"
)

const insertBooking = `
INSERT INTO bookings (id, screening_id, customer, seats, status, token_hash, created_at,
                      idem_key_hash, idem_request_hash, idem_sealed_token, idem_created_at)
VALUES ($1, $2, $3, $4, 'confirmed', $5, $6, $7, $8, $9, $10)`

// bookSeats is the whole of Book in one statement: the function book_seats
// of migration 0009 inserts the booking and upserts its seats through the
// guard (seat_writable), and raises an error that undoes both when the guard refuses a seat
// (see guardError).
const bookSeats = `SELECT book_seats($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// Book writes a confirmed booking and gives it its seats, all or nothing,
// in one statement (book_seats, the guarded write): one round trip, its own
// implicit transaction, committed by the server when the statement
// succeeds. GroupCommit wraps a Store to share that round trip and its
// COMMIT among concurrent bookings.
//
// With reservation.GuardFence every seat must be free and, when the write
// carries a fence for it, that fence must be greater than the seat's last
// one. When some seats are taken it returns a *reservation.SeatsTakenError
// naming them, in the order of the booking's seats, even if other seats are
// stale too; else, when some are held by a live hold, a
// *reservation.SeatsHeldError; else, when a fence is stale, a
// *reservation.StaleTokenError (ErrStaleToken). With reservation.GuardOff the seats are given
// away whatever held them.
//
// It also returns reservation.ErrNotFound for an unknown screening,
// reservation.ErrConflict when the booking id or the idempotency key was used
// before, reservation.ErrInvalid for a malformed write (a booking id that is
// not a uuid, no seats or a seat twice, an unknown guard), and
// reservation.ErrUnavailable when the database cannot be reached. Nothing is
// written when it fails, but for reservation.ErrWriteInDoubt (which is
// also ErrUnavailable): the statement was sent and no answer came back (the
// connection died, ctx ended), so it may have committed.
func (s *Store) Book(ctx context.Context, w reservation.Write) error {
	if err := w.Validate(); err != nil {
		return err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return translate("book", err)
	}
	defer conn.Release()
	return bookAlone(ctx, conn, w)
}

// bookAlone writes a validated w on conn as one statement, its own
// transaction, and returns Book's error.
func bookAlone(ctx context.Context, conn *pgxpool.Conn, w reservation.Write) error {
	err := book(ctx, conn, w)
	if err != nil && sentUnanswered(err) {
		// Alone, the statement is its own transaction: sent and not
		// answered, it may have committed.
		return fmt.Errorf("postgres: book: %w: %w", reservation.ErrWriteInDoubt, err)
	}
	return guardError("book", err)
}

// execer is what book needs of a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// book writes a validated w through q: on a connection, in a transaction
// of its own; in a transaction, as part of it, which the caller then
// commits (on success) or rolls back. It returns the driver's error, for
// guardError to translate.
func book(ctx context.Context, q execer, w reservation.Write) error {
	if w.PaymentID != "" {
		_, err := q.Exec(ctx, bookPaid, append([]any{w.PaymentID, w.ChargeID}, bookArgs(w)...)...)
		return err
	}
	_, err := q.Exec(ctx, bookSeats, bookArgs(w)...)
	return err
}

// bookArgs are the arguments of book_seats for w (batchArgs, of a batch's
// book_batch, has one array of each).
func bookArgs(w reservation.Write) []any {
	b := w.Booking
	fences := make([]int64, len(b.Seats))
	for i, seat := range b.Seats {
		fences[i] = w.Fences[seat]
	}
	var idemKey, idemRequest, idemSealed []byte
	var idemAt *time.Time
	if rec := w.Idempotency; rec != nil {
		idemKey, idemRequest, idemSealed, idemAt = rec.KeyHash, rec.RequestHash, rec.SealedToken, &rec.CreatedAt
	}
	return []any{b.ID, b.ScreeningID, b.Customer, b.Seats, fences, w.TokenHash, b.CreatedAt,
		idemKey, idemRequest, idemSealed, idemAt, w.Guard == reservation.GuardOff}
}

// guardError turns an error of the guarded write (give_seats)
// into the store's errors: the error refuse_seats raises when the guard
// refuses a seat becomes the domain's refusal, anything else is translated
// as the error of operation op.
func guardError(op string, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return translate(op, err)
	}
	switch pgErr.Code {
	case "SLTKN":
		return &reservation.SeatsTakenError{Seats: strings.Split(pgErr.Detail, ",")}
	case "SLHLD":
		return &reservation.SeatsHeldError{Seats: strings.Split(pgErr.Detail, ",")}
	case "SLSTL":
		return fmt.Errorf("postgres: %s: %w", op, &reservation.StaleTokenError{Seen: seenFences(pgErr.Detail)})
	case "SLPAY":
		return fmt.Errorf("postgres: %s: %w", op, reservation.ErrPaymentSettled)
	}
	return translate(op, err)
}

// seenFences reads the DETAIL of a refusal for a stale fence (SLSTL,
// migration 0009): comma-separated seat=fence pairs. A pair it cannot
// read is left out: the refusal stands without it.
func seenFences(detail string) map[string]int64 {
	seen := make(map[string]int64)
	for pair := range strings.SplitSeq(detail, ",") {
		seat, fence, ok := strings.Cut(pair, "=")
		if n, err := strconv.ParseInt(fence, 10, 64); ok && err == nil {
			seen[seat] = n
		}
	}
	return seen
}

// bookResults reads the answers to Book's batch: the seats the upsert wrote.
// Close reads the answers to any statements queued after the upsert, and
// returns the first error among them.
func bookResults(results pgx.BatchResults) ([]string, error) {
	defer results.Close()
	if _, err := results.Exec(); err != nil {
		return nil, err
	}
	rows, _ := results.Query()
	written, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	return written, results.Close()
}
