package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/reservation"
)

// Holds live in the table holds, and each held seat's row carries the
// hold's id and a copy of its expiry, so that every write's guard (a
// booking's, a hold's, a confirm's) decides on the seat row alone, under
// that row's lock: a seat is held while hold_expires_at > clock_timestamp(),
// the database's clock, which every instance of the API shares. Nothing
// runs when a hold expires; the next write of the seat finds the hold
// over and overwrites it.
//
// Lock order: an operation on an existing hold (confirm, release) locks the
// hold's row first, then its seats' rows in seat order; every other write
// locks only seat rows, in seat order. So no two of them wait for each
// other in a cycle.

const insertHold = `
INSERT INTO holds (id, screening_id, customer, seats, status, token_hash, created_at, expires_at)
SELECT $1, $2, $3, $4, 'held', $5, t.now, t.now + $6::interval
FROM (SELECT date_trunc('microseconds', clock_timestamp()) AS now) AS t
RETURNING created_at, expires_at`

// holdSeats gives the hold's seats to it through the guarded write
// (give_seats, migration 0009), which raises an error that undoes the hold
// when the guard refuses a seat (see guardError).
const holdSeats = `SELECT give_seats($2, $3, $4, NULL, $1, false)`

// CreateHold records a new live hold on the seats, all or nothing, in one
// transaction: begin, one batch with the hold's insert and the seats'
// guarded upsert, commit. The hold's expiry is the database's clock plus
// w.TTL. See reservation.HoldStore for its errors; it also returns
// reservation.ErrUnavailable when the database cannot be reached.
func (s *Store) CreateHold(ctx context.Context, w reservation.HoldWrite) (reservation.Hold, error) {
	if err := w.Validate(); err != nil {
		return reservation.Hold{}, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return reservation.Hold{}, translate("create hold", err)
	}
	defer tx.Rollback(ctx) // after Commit, a no-op
	h, err := createHold(ctx, tx, w)
	if err != nil {
		return reservation.Hold{}, err
	}
	return h, translate("create hold", tx.Commit(ctx))
}

// createHold writes a validated w inside tx and leaves tx to the caller.
func createHold(ctx context.Context, tx pgx.Tx, w reservation.HoldWrite) (reservation.Hold, error) {
	h := w.Hold
	fences := make([]int64, len(h.Seats))
	for i, seat := range h.Seats {
		fences[i] = w.Fences[seat]
	}
	batch := &pgx.Batch{}
	batch.Queue(insertHold, h.ID, h.ScreeningID, h.Customer, h.Seats, w.TokenHash, w.TTL)
	batch.Queue(holdSeats, h.ID, h.ScreeningID, h.Seats, fences)
	if err := holdResults(tx.SendBatch(ctx, batch), &h); err != nil {
		return reservation.Hold{}, guardError("create hold", err)
	}
	h.Seats = slices.Clone(h.Seats)
	h.Status = reservation.HoldHeld
	h.BookingID = ""
	h.CreatedAt, h.ExpiresAt = h.CreatedAt.UTC(), h.ExpiresAt.UTC()
	return h, nil
}

// holdResults reads the answers to CreateHold's batch: the hold's times
// into h, and the error of give_seats, if any.
func holdResults(results pgx.BatchResults, h *reservation.Hold) error {
	defer results.Close()
	if err := results.QueryRow().Scan(&h.CreatedAt, &h.ExpiresAt); err != nil {
		return err
	}
	return results.Close()
}

// selectHold reads a hold; a held hold whose expiry has passed reads as
// expired.
const selectHold = `
SELECT screening_id, customer, seats,
       CASE WHEN status = 'held' AND expires_at <= clock_timestamp() THEN 'expired' ELSE status END,
       created_at, expires_at, coalesce(booking_id::text, ''), token_hash
FROM holds WHERE id = $1`

// Hold returns the hold with the id and the hash of its token, or
// reservation.ErrNotFound.
func (s *Store) Hold(ctx context.Context, id string) (reservation.Hold, []byte, error) {
	return readHold(ctx, s.pool, selectHold, id)
}

func readHold(ctx context.Context, q querier, query, id string) (reservation.Hold, []byte, error) {
	if uuid.Validate(id) != nil {
		return reservation.Hold{}, nil, fmt.Errorf("postgres: hold: %w", reservation.ErrNotFound)
	}
	h := reservation.Hold{ID: id}
	var tokenHash []byte
	err := q.QueryRow(ctx, query, id).Scan(&h.ScreeningID, &h.Customer, &h.Seats, &h.Status,
		&h.CreatedAt, &h.ExpiresAt, &h.BookingID, &tokenHash)
	if err != nil {
		return reservation.Hold{}, nil, translate("hold", err)
	}
	h.CreatedAt, h.ExpiresAt = h.CreatedAt.UTC(), h.ExpiresAt.UTC()
	return h, tokenHash, nil
}

// selectSeatsInUse lists which of the seats $2 are booked (true) or held by
// a live hold (false), in the order asked.
const selectSeatsInUse = `
SELECT s.seat, s.booking_id IS NOT NULL
FROM unnest($2::text[]) WITH ORDINALITY AS asked (seat, n)
JOIN seats s ON s.screening_id = $1 AND s.seat = asked.seat
WHERE s.booking_id IS NOT NULL OR (s.hold_id IS NOT NULL AND s.hold_expires_at > clock_timestamp())
ORDER BY asked.n`

// SeatsInUse returns which of the given seats are booked and which are
// held by a live hold, each in the order given, in one query.
func (s *Store) SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error) {
	return seatsInUse(ctx, s.pool, screeningID, seats)
}

func seatsInUse(ctx context.Context, q querier, screeningID string, seats []string) (taken, held []string, err error) {
	if len(seats) == 0 {
		return nil, nil, nil
	}
	rows, _ := q.Query(ctx, selectSeatsInUse, screeningID, seats)
	var seat string
	var booked bool
	_, err = pgx.ForEachRow(rows, []any{&seat, &booked}, func() error {
		if booked {
			taken = append(taken, seat)
		} else {
			held = append(held, seat)
		}
		return nil
	})
	if err != nil {
		return nil, nil, translate("seats in use", err)
	}
	return taken, held, nil
}

// SeatHolds returns the seats of a screening held by a live hold, each
// mapped to its hold's expiry.
func (s *Store) SeatHolds(ctx context.Context, screeningID string) (map[string]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `
		SELECT seat, hold_expires_at FROM seats
		WHERE screening_id = $1 AND hold_id IS NOT NULL AND hold_expires_at > clock_timestamp()`, screeningID)
	out := make(map[string]time.Time)
	var seat string
	var at time.Time
	_, err := pgx.ForEachRow(rows, []any{&seat, &at}, func() error {
		out[seat] = at.UTC()
		return nil
	})
	if err != nil {
		return nil, translate("seat holds", err)
	}
	return out, nil
}
