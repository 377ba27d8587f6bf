package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/reservation"
)

var _ reservation.Store = (*Store)(nil)

// Store is a reservation.Store in a Postgres database. Create it with Open
// (or New over a pool of your own); it is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool

	// txSlots bounds the bookings in a transaction (XactLocker) at once:
	// each holds a connection for its whole critical section, payment
	// included, so without a bound they could take every connection and
	// leave every other request of the store waiting for as long as a
	// payment takes. A booking takes a slot by sending into it.
	txSlots chan struct{}

	// committer writes Book's bookings, alone or several in one
	// transaction (group commit, see committer).
	committer *committer
}

// txSlotCount is how many of a pool's connections bookings in a
// transaction may hold at once: all but a quarter (at least one, if the
// pool has two), which stay for the reads and writes of everything else.
func txSlotCount(maxConns int32) int {
	reserve := min(maxConns-1, max(1, maxConns/4))
	return int(max(1, maxConns-reserve))
}

// Options configure Open. The zero value works.
type Options struct {
	// MaxConns is the most connections the pool opens. Zero keeps the
	// URL's pool_max_conns, or else DefaultMaxConns.
	MaxConns int32
}

// DefaultMaxConns is the pool size when neither Options.MaxConns nor the
// URL's pool_max_conns sets one. pgxpool's own default, 4 (or the number of
// CPUs if more), is too small for the booking API: each booking holds a
// connection only briefly (one statement, or two with a payment: the seat
// check, then the write), and with tens of bookings in flight four
// connections become the queue every booking waits in
// (docs/benchmarks-loadgen.md). It is small so that many stores (the
// test suites running side by side) fit in Postgres's default
// max_connections of 100; a busy instance wants more (docs/backends.md
// compares store pools of 8, 11, 16 and 32 connections), and cmd/api
// sizes its pools from DB_MAX_CONNS, 12 for the store by default.
const DefaultMaxConns = 8

// Open connects to the database at databaseURL with a pool, applies the
// migrations it lacks (see Migrate), and returns the store. It returns an
// error wrapping reservation.ErrUnavailable when the server cannot be
// reached.
func Open(ctx context.Context, databaseURL string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("postgres: database URL: %w", err)
	}
	switch {
	case opts.MaxConns > 0:
		cfg.MaxConns = opts.MaxConns
	case !strings.Contains(databaseURL, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, translate("open", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate("open", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return New(pool), nil
}

// New returns a store over a pool whose database is migrated already. The
// store owns the pool from then on: Close closes it.
func New(pool *pgxpool.Pool) *Store {
	return &Store{
		pool:      pool,
		txSlots:   make(chan struct{}, txSlotCount(pool.Config().MaxConns)),
		committer: &committer{pool: pool},
	}
}

// Close closes the pool, waiting for the connections in use to be given
// back.
func (s *Store) Close() {
	s.committer.wait()
	s.pool.Close()
}

// Ping reports whether the database answers, with an error wrapping
// reservation.ErrUnavailable when it does not.
func (s *Store) Ping(ctx context.Context) error {
	return translate("ping", s.pool.Ping(ctx))
}

const insertScreening = `
INSERT INTO screenings (id, movie, starts_at, row_count, seats_per_row, lock_strategy, write_guard, payment_delay, hold_ttl,
                        queue_admit_per_s, queue_admitted_for)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// CreateScreening stores a new screening. It returns reservation.ErrConflict
// if the id is taken.
func (s *Store) CreateScreening(ctx context.Context, sc reservation.Screening) error {
	_, err := s.pool.Exec(ctx, insertScreening,
		sc.ID, sc.Movie, sc.StartsAt, sc.Rows, sc.SeatsPerRow, sc.Lock, sc.Guard, sc.PaymentDelay, sc.HoldTTL,
		sc.Queue.AdmitPerSecond, sc.Queue.AdmittedFor)
	return translate("create screening", err)
}

const selectScreenings = `
SELECT id, movie, starts_at, row_count, seats_per_row, lock_strategy, write_guard, payment_delay, hold_ttl,
       queue_admit_per_s, queue_admitted_for
FROM screenings`

// CountScreenings returns how many screenings the store holds.
func (s *Store) CountScreenings(ctx context.Context) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM screenings`).Scan(&n)
	return n, translate("count screenings", err)
}

// Screening returns the screening with the id, or reservation.ErrNotFound.
func (s *Store) Screening(ctx context.Context, id string) (reservation.Screening, error) {
	rows, _ := s.pool.Query(ctx, selectScreenings+` WHERE id = $1`, id)
	sc, err := pgx.CollectExactlyOneRow(rows, scanScreening)
	return sc, translate("screening", err)
}

// Screenings returns up to limit screenings in the order they were
// created, starting after the screening with the id after.
func (s *Store) Screenings(ctx context.Context, after string, limit int) ([]reservation.Screening, error) {
	var seq int64 // seq starts at 1, so 0 lists from the oldest
	if after != "" {
		err := s.pool.QueryRow(ctx, `SELECT seq FROM screenings WHERE id = $1`, after).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("after is no cursor of this list: %w", reservation.ErrInvalid)
		}
		if err != nil {
			return nil, translate("screenings", err)
		}
	}
	rows, _ := s.pool.Query(ctx, selectScreenings+` WHERE seq > $1 ORDER BY seq LIMIT $2`, seq, max(limit, 0))
	page, err := pgx.CollectRows(rows, scanScreening)
	return page, translate("screenings", err)
}

func scanScreening(row pgx.CollectableRow) (reservation.Screening, error) {
	var sc reservation.Screening
	err := row.Scan(&sc.ID, &sc.Movie, &sc.StartsAt, &sc.Rows, &sc.SeatsPerRow, &sc.Lock, &sc.Guard, &sc.PaymentDelay, &sc.HoldTTL,
		&sc.Queue.AdmitPerSecond, &sc.Queue.AdmittedFor)
	sc.StartsAt = sc.StartsAt.UTC()
	return sc, err
}

// BookedSeats returns the booked seats of a screening, mapped to the id of
// the booking that holds each.
func (s *Store) BookedSeats(ctx context.Context, screeningID string) (map[string]string, error) {
	rows, _ := s.pool.Query(ctx,
		`SELECT seat, booking_id FROM seats WHERE screening_id = $1 AND booking_id IS NOT NULL`, screeningID)
	booked := make(map[string]string)
	var seat, bookingID string
	_, err := pgx.ForEachRow(rows, []any{&seat, &bookingID}, func() error {
		booked[seat] = bookingID
		return nil
	})
	if err != nil {
		return nil, translate("booked seats", err)
	}
	return booked, nil
}

// DoubleBookedSeats returns the seats that more than one confirmed booking
// claims, each mapped to their ids, oldest first.
func (s *Store) DoubleBookedSeats(ctx context.Context, screeningID string) (map[string][]string, error) {
	rows, _ := s.pool.Query(ctx, `
SELECT seat, array_agg(id::text ORDER BY created_at, id)
FROM bookings CROSS JOIN LATERAL unnest(seats) AS seat
WHERE screening_id = $1 AND status = 'confirmed'
GROUP BY seat
HAVING count(*) > 1`, screeningID)
	claims := make(map[string][]string)
	var seat string
	var ids []string
	_, err := pgx.ForEachRow(rows, []any{&seat, &ids}, func() error {
		claims[seat] = ids
		ids = nil
		return nil
	})
	if err != nil {
		return nil, translate("double-booked seats", err)
	}
	return claims, nil
}

// querier is what the reads need of a pool or a transaction, so that a
// booking's critical section can read through the transaction that holds
// its locks (see XactLocker).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

const insertBooking = `
INSERT INTO bookings (id, screening_id, customer, seats, status, token_hash, created_at,
                      idem_key_hash, idem_request_hash, idem_sealed_token, idem_created_at)
VALUES ($1, $2, $3, $4, 'confirmed', $5, $6, $7, $8, $9, $10)`

// bookSeats is the whole of Book in one statement: the function book_seats
// of migration 0003 inserts the booking and upserts its seats through the
// guard, and raises an error that undoes both when the guard refuses a seat
// (see bookError).
const bookSeats = `SELECT book_seats($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// Book writes a confirmed booking and gives it its seats, all or nothing.
// Alone, it is one statement and so one round trip: its own implicit
// transaction, committed by the server when the statement succeeds. Under
// load it shares a round trip, a transaction and its COMMIT with the
// bookings of other callers (group commit, see committer), still all or
// nothing on its own, and it returns only once that COMMIT is answered.
//
// With reservation.GuardFence every seat must be free and, when the write
// carries a fence for it, that fence must be greater than the seat's last
// one. When some seats are taken it returns a *reservation.SeatsTakenError
// naming them, in the order of the booking's seats, even if other seats are
// stale too; else, when some are held by a live hold, a
// *reservation.SeatsHeldError; else, when a fence is stale,
// reservation.ErrStaleToken. With reservation.GuardOff the seats are given
// away whatever held them.
//
// It also returns reservation.ErrNotFound for an unknown screening,
// reservation.ErrConflict when the booking id or the idempotency key was used
// before, reservation.ErrInvalid for a malformed write (a booking id that is
// not a uuid, no seats or a seat twice, an unknown guard), and
// reservation.ErrUnavailable when the database cannot be reached. Nothing is
// written when it fails, but for reservation.ErrWriteInDoubt (which is
// also ErrUnavailable): the statement was sent and no answer came back (the
// connection died, ctx ended), so it may have committed. A ctx that ends
// while the booking is on the wire with others does not stop their
// transaction: Book returns ErrWriteInDoubt at once, and the booking may
// still commit.
func (s *Store) Book(ctx context.Context, w reservation.Write) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if w.PaymentID != "" {
		// A paid booking waited for its payment; it waits for no batch.
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return translate("book", err)
		}
		defer conn.Release()
		return bookAlone(ctx, conn, w)
	}
	return s.committer.book(ctx, w)
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
	return bookError(err)
}

// execer is what book needs of a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// book writes a validated w through q: on a connection, in a transaction
// of its own; in a transaction, as part of it, which the caller then
// commits (on success) or rolls back. It returns the driver's error, for
// bookError to translate.
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

// bookError turns an error of book into the errors of Book: the error
// book_seats raises when its guard refuses a seat becomes the domain's
// refusal, anything else is translated.
func bookError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return translate("book", err)
	}
	switch pgErr.Code {
	case "SLTKN":
		return &reservation.SeatsTakenError{Seats: strings.Split(pgErr.Detail, ",")}
	case "SLHLD":
		return &reservation.SeatsHeldError{Seats: strings.Split(pgErr.Detail, ",")}
	case "SLSTL":
		return fmt.Errorf("postgres: book: %w", reservation.ErrStaleToken)
	case "SLPAY":
		return fmt.Errorf("postgres: book: %w", reservation.ErrPaymentSettled)
	}
	return translate("book", err)
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

const selectTakenSeats = `
SELECT s.seat
FROM unnest($2::text[]) WITH ORDINALITY AS asked (seat, n)
JOIN seats s ON s.screening_id = $1 AND s.seat = asked.seat
WHERE s.booking_id IS NOT NULL
ORDER BY asked.n`

// refusal finds out why the guard refused some seats of b, inside the
// transaction that tried to write them. The upsert has locked every seat row
// it touched, written or not, so what it reads here is exactly what the
// guard saw (a hold that expired since is reported as held: it was live
// when the guard looked). The caller rolls the transaction back.
func refusal(ctx context.Context, tx pgx.Tx, screeningID string, seats, written []string) error {
	var refused []string
	for _, seat := range seats {
		if !slices.Contains(written, seat) {
			refused = append(refused, seat)
		}
	}
	rows, _ := tx.Query(ctx, selectTakenSeats, screeningID, refused)
	taken, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate("book", err)
	}
	if len(taken) > 0 {
		return &reservation.SeatsTakenError{Seats: taken}
	}
	rows, _ = tx.Query(ctx, selectHoldingSeats, screeningID, refused)
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return translate("book", err)
	}
	if len(held) > 0 {
		return &reservation.SeatsHeldError{Seats: held}
	}
	// Free but refused: the seat has seen a newer fence.
	return fmt.Errorf("postgres: book: %w", reservation.ErrStaleToken)
}

// Booking returns the booking with the id and the hash of its token, or
// reservation.ErrNotFound.
func (s *Store) Booking(ctx context.Context, id string) (reservation.Booking, []byte, error) {
	return booking(ctx, s.pool, id)
}

func booking(ctx context.Context, q querier, id string) (reservation.Booking, []byte, error) {
	if uuid.Validate(id) != nil {
		return reservation.Booking{}, nil, fmt.Errorf("postgres: booking: %w", reservation.ErrNotFound)
	}
	b := reservation.Booking{ID: id}
	var tokenHash []byte
	err := q.QueryRow(ctx,
		`SELECT screening_id, customer, seats, status, created_at, token_hash FROM bookings WHERE id = $1`, id,
	).Scan(&b.ScreeningID, &b.Customer, &b.Seats, &b.Status, &b.CreatedAt, &tokenHash)
	if err != nil {
		return reservation.Booking{}, nil, translate("booking", err)
	}
	b.CreatedAt = b.CreatedAt.UTC()
	return b, tokenHash, nil
}

// cancelBooking marks the booking cancelled and frees the seats it still
// holds, in one statement (so one implicit transaction); the payment that
// booked it becomes owed back (refunding, due at once). The seats are
// locked in sorted order, the order Book writes them in, so that a cancel
// and a booking of the same seats cannot deadlock. It returns the number of
// bookings found: 0 or 1.
const cancelBooking = `
WITH cancelled AS (
    UPDATE bookings SET status = 'cancelled'
    WHERE id = $1
    RETURNING screening_id, seats
), owed AS (
    UPDATE payments SET status = 'refunding', settle_after = now()
    WHERE booking_id = $1 AND status = 'booked'
), held AS (
    SELECT s.screening_id, s.seat
    FROM seats s JOIN cancelled c ON s.screening_id = c.screening_id AND s.seat = ANY (c.seats)
    WHERE s.booking_id = $1
    ORDER BY s.seat
    FOR UPDATE OF s
), freed AS (
    UPDATE seats SET booking_id = NULL
    FROM held
    WHERE seats.screening_id = held.screening_id AND seats.seat = held.seat
)
SELECT count(*) FROM cancelled`

// Cancel marks a booking cancelled and frees the seats it still holds; a
// seat that a later booking took over (under GuardOff) stays with that
// booking. Cancelling a cancelled booking changes nothing. It returns
// reservation.ErrNotFound if there is no such booking.
func (s *Store) Cancel(ctx context.Context, id string) error {
	if uuid.Validate(id) != nil {
		return fmt.Errorf("postgres: cancel: %w", reservation.ErrNotFound)
	}
	var found int
	if err := s.pool.QueryRow(ctx, cancelBooking, id).Scan(&found); err != nil {
		return translate("cancel", err)
	}
	if found == 0 {
		return fmt.Errorf("postgres: cancel: %w", reservation.ErrNotFound)
	}
	return nil
}

// Idempotent returns the record of the booking made with the key hash on
// the screening, or reservation.ErrNotFound.
func (s *Store) Idempotent(ctx context.Context, screeningID string, keyHash []byte) (reservation.IdempotencyRecord, error) {
	return idempotent(ctx, s.pool, screeningID, keyHash)
}

func idempotent(ctx context.Context, q querier, screeningID string, keyHash []byte) (reservation.IdempotencyRecord, error) {
	var rec reservation.IdempotencyRecord
	err := q.QueryRow(ctx, `
		SELECT id, idem_request_hash, idem_sealed_token, idem_created_at
		FROM bookings WHERE screening_id = $1 AND idem_key_hash = $2`, screeningID, keyHash,
	).Scan(&rec.BookingID, &rec.RequestHash, &rec.SealedToken, &rec.CreatedAt)
	if err != nil {
		return reservation.IdempotencyRecord{}, translate("idempotency record", err)
	}
	rec.KeyHash = slices.Clone(keyHash)
	rec.CreatedAt = rec.CreatedAt.UTC()
	return rec, nil
}
