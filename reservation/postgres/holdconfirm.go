// The ends of a hold: its confirmation into a booking, and its release.

package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/seatlock/seatlock/reservation"
)

// confirmSeats moves a live hold's seats to its booking, locking the seat
// rows in seat order first, through the write guard (seat_writable,
// migration 0009) with the hold's id: a seat no longer held by that hold,
// live by the database's clock at this statement, is not moved, and fewer
// rows back than seats means the confirm must fail.
const confirmSeats = `
WITH held AS (
    SELECT screening_id, seat
    FROM seats
    WHERE screening_id = $1 AND seat = ANY ($2::text[])
    ORDER BY seat
    FOR UPDATE
)
UPDATE seats SET booking_id = $4, hold_id = NULL, hold_expires_at = NULL
FROM held
WHERE seats.screening_id = held.screening_id AND seats.seat = held.seat
  AND seat_writable(seats, 0, $3)
RETURNING seats.seat`

// ConfirmHold turns a live hold into the booking w in one transaction. It
// locks the hold's row first (FOR UPDATE), so that a concurrent confirm or
// release of the same hold waits and then finds it confirmed; then it
// writes the booking and moves the seats, whose own guard checks the
// expiry again by the database's clock at that moment. A hold that expires
// between the two checks is refused by the second, and the transaction
// rolls back: never a booking from an expired hold. See
// reservation.HoldStore for its errors.
func (s *Store) ConfirmHold(ctx context.Context, holdID string, w reservation.Write) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if uuid.Validate(holdID) != nil {
		return fmt.Errorf("postgres: confirm hold: %w", reservation.ErrNotFound)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return translate("confirm hold", err)
	}
	defer tx.Rollback(ctx) // after Commit, a no-op
	h, _, err := readHold(ctx, tx, selectHold+` FOR UPDATE`, holdID)
	if err != nil {
		return err
	}
	b := w.Booking
	switch {
	case h.Status == reservation.HoldExpired:
		return fmt.Errorf("postgres: confirm hold %s: %w", holdID, reservation.ErrHoldExpired)
	case h.Status != reservation.HoldHeld:
		return fmt.Errorf("postgres: confirm hold %s: it is %s: %w", holdID, h.Status, reservation.ErrConflict)
	case b.ScreeningID != h.ScreeningID || !slices.Equal(b.Seats, h.Seats):
		return fmt.Errorf("postgres: confirm hold: the booking is not for the seats of hold %s: %w", holdID, reservation.ErrInvalid)
	}
	if err := markPaymentBooked(ctx, tx, w); err != nil {
		return err
	}
	batch := &pgx.Batch{}
	batch.Queue(insertBooking, b.ID, b.ScreeningID, b.Customer, b.Seats, w.TokenHash, b.CreatedAt,
		nil, nil, nil, nil)
	batch.Queue(confirmSeats, h.ScreeningID, h.Seats, holdID, b.ID)
	batch.Queue(`UPDATE holds SET status = 'confirmed', booking_id = $2 WHERE id = $1`, holdID, b.ID)
	moved, err := bookResults(tx.SendBatch(ctx, batch))
	if err != nil {
		return translate("confirm hold", err)
	}
	if len(moved) < len(h.Seats) {
		var live bool
		if err := tx.QueryRow(ctx, `SELECT expires_at > clock_timestamp() FROM holds WHERE id = $1`, holdID).Scan(&live); err != nil {
			return translate("confirm hold", err)
		}
		if !live {
			return fmt.Errorf("postgres: confirm hold %s: %w", holdID, reservation.ErrHoldExpired)
		}
		// Only a blind write (GuardOff) takes a seat from a live hold.
		return fmt.Errorf("postgres: confirm hold %s: a blind write took some of its seats: %w", holdID, reservation.ErrConflict)
	}
	return translate("confirm hold", tx.Commit(ctx))
}

// releaseSeats frees the seats a hold still holds, locking them in seat
// order.
const releaseSeats = `
WITH held AS (
    SELECT screening_id, seat
    FROM seats
    WHERE screening_id = $1 AND seat = ANY ($2::text[]) AND hold_id = $3
    ORDER BY seat
    FOR UPDATE
)
UPDATE seats SET hold_id = NULL, hold_expires_at = NULL
FROM held
WHERE seats.screening_id = held.screening_id AND seats.seat = held.seat AND seats.hold_id = $3`

// ReleaseHold ends a live hold and frees its seats in one transaction,
// with the hold's row locked first like ConfirmHold. See
// reservation.HoldStore.
func (s *Store) ReleaseHold(ctx context.Context, id string) (reservation.HoldStatus, error) {
	if uuid.Validate(id) != nil {
		return "", fmt.Errorf("postgres: release hold: %w", reservation.ErrNotFound)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", translate("release hold", err)
	}
	defer tx.Rollback(ctx) // after Commit, a no-op
	h, _, err := readHold(ctx, tx, selectHold+` FOR UPDATE`, id)
	if err != nil {
		return "", err
	}
	switch h.Status {
	case reservation.HoldConfirmed:
		return h.Status, fmt.Errorf("postgres: release hold %s: it is confirmed: %w", id, reservation.ErrConflict)
	case reservation.HoldReleased, reservation.HoldExpired:
		return h.Status, nil
	}
	batch := &pgx.Batch{}
	batch.Queue(`UPDATE holds SET status = 'released' WHERE id = $1`, id)
	batch.Queue(releaseSeats, h.ScreeningID, h.Seats, id)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return "", translate("release hold", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", translate("release hold", err)
	}
	return reservation.HoldHeld, nil
}
