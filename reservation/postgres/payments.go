package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/reservation"
)

// settleRetry is how long a payment whose settle failed waits before
// SettleDue tries it again.
const settleRetry = 5 * time.Second

// CreatePayment records p as pending, due after settleIn by the database's
// clock. See reservation.PaymentStore.
func (s *Store) CreatePayment(ctx context.Context, p reservation.Payment, settleIn time.Duration) error {
	fences, err := json.Marshal(p.Fences)
	if err != nil {
		return fmt.Errorf("postgres: create payment: %w", err)
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO payments (id, booking_id, screening_id, seats, customer, fences, idem_key_hash, status, settle_after)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', now() + $8::interval)`,
		p.ID, p.BookingID, p.ScreeningID, p.Seats, p.Customer, fences, p.KeyHash, settleIn)
	return translate("create payment", err)
}

// selectPayment reads a payment's columns in the order scanPayment takes.
const selectPayment = `
SELECT id, booking_id, screening_id, seats, customer, fences, idem_key_hash, status, coalesce(charge_id, ''), settle_after
FROM payments`

func scanPayment(row pgx.Row) (reservation.Payment, error) {
	var p reservation.Payment
	var fences []byte
	err := row.Scan(&p.ID, &p.BookingID, &p.ScreeningID, &p.Seats, &p.Customer, &fences, &p.KeyHash, &p.Status, &p.ChargeID, &p.SettleAfter)
	if err != nil {
		return reservation.Payment{}, err
	}
	if err := json.Unmarshal(fences, &p.Fences); err != nil {
		return reservation.Payment{}, fmt.Errorf("postgres: payment %s: fences: %w", p.ID, err)
	}
	p.SettleAfter = p.SettleAfter.UTC()
	return p, nil
}

// PendingPayment returns the pending payment with the key hash on the
// screening. See reservation.PaymentStore.
func (s *Store) PendingPayment(ctx context.Context, screeningID string, keyHash []byte) (reservation.Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, selectPayment+`
		WHERE screening_id = $1 AND idem_key_hash = $2 AND status = 'pending'`, screeningID, keyHash))
	return p, translate("pending payment", err)
}

// SettlePayment settles the payment with the id if it is open, in a
// transaction that holds its row lock meanwhile, so that a booking of the
// same payment waits for the outcome. See reservation.PaymentStore.
func (s *Store) SettlePayment(ctx context.Context, id string, settle reservation.SettleFunc) (reservation.Payment, error) {
	var p reservation.Payment
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		p, err = scanPayment(tx.QueryRow(ctx, selectPayment+` WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return translate("settle payment", err)
		}
		p, err = settleLocked(ctx, tx, p, settle)
		return err
	})
	return p, err
}

// SettleDue settles up to limit due payments, one transaction each,
// skipping the rows another transaction holds. See
// reservation.PaymentStore.
func (s *Store) SettleDue(ctx context.Context, limit int, settle reservation.SettleFunc) (int, error) {
	var errs []error
	n := 0
	for n+len(errs) < limit && ctx.Err() == nil {
		found, err := s.settleNextDue(ctx, settle)
		if !found {
			return n, errors.Join(append(errs, err)...)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// settleNextDue settles the open payment due first that nobody else holds,
// if there is one. A settle that fails puts the payment off by
// settleRetry, so that the next call goes on to the others.
func (s *Store) settleNextDue(ctx context.Context, settle reservation.SettleFunc) (found bool, err error) {
	var failed error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		p, err := scanPayment(tx.QueryRow(ctx, selectPayment+`
			WHERE status IN ('pending', 'refunding') AND settle_after <= now()
			ORDER BY settle_after LIMIT 1 FOR UPDATE SKIP LOCKED`))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return translate("settle due payments", err)
		}
		found = true
		if _, failed = settleLocked(ctx, tx, p, settle); failed != nil {
			_, err = tx.Exec(ctx, `UPDATE payments SET settle_after = now() + $2::interval WHERE id = $1`, p.ID, settleRetry)
			return translate("settle due payments", err)
		}
		return nil
	})
	return found, errors.Join(err, failed)
}

// settleLocked settles p, whose row tx holds, if it is open, and returns
// it as it stands after.
func settleLocked(ctx context.Context, tx pgx.Tx, p reservation.Payment, settle reservation.SettleFunc) (reservation.Payment, error) {
	if p.Status != reservation.PaymentPending && p.Status != reservation.PaymentRefunding {
		return p, nil
	}
	status, err := settle(ctx, p)
	if err != nil {
		return p, err
	}
	if _, err := tx.Exec(ctx, `UPDATE payments SET status = $2, settled_at = now() WHERE id = $1`, p.ID, status); err != nil {
		return p, translate("settle payment", err)
	}
	p.Status = status
	return p, nil
}

// bookPaid is the statement of Book for a write with a payment: book_paid
// (migration 0006) books the payment and writes the booking as book_seats
// does, in one statement.
const bookPaid = `SELECT book_paid($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`

// markPaymentBooked books the payment of a confirmed hold, in the confirm's
// transaction; it reports ErrPaymentSettled when the payment is not
// pending.
func markPaymentBooked(ctx context.Context, tx pgx.Tx, w reservation.Write) error {
	if w.PaymentID == "" {
		return nil
	}
	tag, err := tx.Exec(ctx, `
		UPDATE payments SET status = 'booked', charge_id = $2, settled_at = now()
		WHERE id = $1 AND status = 'pending' AND booking_id = $3`, w.PaymentID, w.ChargeID, w.Booking.ID)
	if err != nil {
		return translate("confirm hold", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: payment %s: %w", w.PaymentID, reservation.ErrPaymentSettled)
	}
	return nil
}
