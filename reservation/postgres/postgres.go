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
		pool:    pool,
		txSlots: make(chan struct{}, txSlotCount(pool.Config().MaxConns)),
	}
}

// Close closes the pool, waiting for the connections in use to be given
// back.
func (s *Store) Close() {
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

// CountScreenings returns how many screenings start after since or were
// created after since, by the database's clock.
func (s *Store) CountScreenings(ctx context.Context, since time.Time) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM screenings WHERE greatest(starts_at, created_at) > $1`, since).Scan(&n)
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
