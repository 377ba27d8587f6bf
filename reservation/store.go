package reservation

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// Store keeps screenings and bookings. Implementations must give every
// method the same semantics; the shared suite in reservation/storetest
// proves it. They translate driver errors into this package's errors:
// ErrNotFound, ErrConflict, ErrSeatTaken (as *SeatsTakenError),
// ErrSeatHeld (as *SeatsHeldError), ErrStaleToken, and ErrUnavailable when
// the backend cannot be reached.
type Store interface {
	HoldStore    // holds.go
	PaymentStore // payment.go

	// CreateScreening stores a new screening. It returns ErrConflict if the
	// id is taken.
	CreateScreening(ctx context.Context, s Screening) error

	// Screening returns the screening with the id, or ErrNotFound.
	Screening(ctx context.Context, id string) (Screening, error)

	// CountScreenings returns how many of the screenings the store holds
	// start after since or were created after since (by the store's
	// clock): the screenings that still count toward
	// Options.MaxScreenings.
	CountScreenings(ctx context.Context, since time.Time) (int, error)

	// Screenings returns up to limit screenings, oldest first, that were
	// created after the screening with the id after ("" starts at the
	// oldest). It returns ErrInvalid if after names no screening.
	Screenings(ctx context.Context, after string, limit int) ([]Screening, error)

	// BookedSeats returns the booked seats of a screening, mapped to the id
	// of the booking that holds each. It does not check that the screening
	// exists.
	BookedSeats(ctx context.Context, screeningID string) (map[string]string, error)

	// DoubleBookedSeats returns the seats of a screening that more than one
	// confirmed booking claims, each mapped to the ids of those bookings,
	// oldest first. Only a blind write (GuardOff) can make one: the seat
	// goes to the last writer, and the booking it was taken from is still
	// confirmed. It does not check that the screening exists.
	DoubleBookedSeats(ctx context.Context, screeningID string) (map[string][]string, error)

	// Book writes a confirmed booking and gives it its seats, all or
	// nothing, in one transaction. With GuardFence a seat is given only if
	// it is free (else *SeatsTakenError naming every such seat), not held
	// by a live hold (else *SeatsHeldError), and, when
	// its fence is not 0, only if the fence is greater than the last fence
	// written to that seat (else ErrStaleToken). With GuardOff each seat is
	// given to the booking whatever booked or held it before (the last
	// writer wins).
	// It returns ErrConflict if the write's idempotency key was used before
	// on the screening; nothing is written then. A write with a PaymentID
	// books that payment in the same transaction (see Write.PaymentID).
	Book(ctx context.Context, w Write) error

	// Booking returns the booking with the id and the hash of its secret
	// token, or ErrNotFound.
	Booking(ctx context.Context, id string) (Booking, []byte, error)

	// Cancel marks a booking cancelled and frees the seats it still holds,
	// and, in the same transaction, makes the payment that booked it
	// PaymentRefunding, due at once. Cancelling a cancelled booking changes
	// nothing. It returns ErrNotFound if there is no such booking.
	Cancel(ctx context.Context, id string) error

	// Idempotent returns the record of a booking made with the idempotency
	// key hash on the screening, or ErrNotFound.
	Idempotent(ctx context.Context, screeningID string, keyHash []byte) (IdempotencyRecord, error)

	// Ping reports whether the store can be reached.
	Ping(ctx context.Context) error
}

// Write is everything a Store needs to record a booking.
type Write struct {
	Booking   Booking
	TokenHash []byte // SHA-256 of the booking's secret token
	Guard     Guard
	// Fences holds each seat's fencing token from its lock; a seat with no
	// entry (or 0) is written without a fence check.
	Fences map[string]int64
	// Idempotency is set when the request carried an Idempotency-Key.
	Idempotency *IdempotencyRecord
	// PaymentID, when set, names the pending payment that paid for the
	// booking (its BookingID must be the booking's id): the write makes it
	// PaymentBooked, with ChargeID, in its own transaction, and fails with
	// ErrPaymentSettled, writing nothing, when the payment is not pending.
	PaymentID string
	ChargeID  string
}

// Validate refuses a write that no store could record: a booking id that is
// not a uuid, no seats, a seat listed twice, an unknown guard. Stores call
// it first, so that both refuse alike, with ErrInvalid, before any work.
func (w Write) Validate() error {
	b := w.Booking
	if uuid.Validate(b.ID) != nil {
		return errorf(ErrInvalid, "booking id %q is not a uuid", clip(b.ID))
	}
	if len(b.Seats) == 0 {
		return errorf(ErrInvalid, "booking has no seats")
	}
	seen := make(map[string]bool, len(b.Seats))
	for _, seat := range b.Seats {
		if seen[seat] {
			return errorf(ErrInvalid, "seat %q is listed twice", clip(seat))
		}
		seen[seat] = true
	}
	if w.Guard != GuardFence && w.Guard != GuardOff {
		return errorf(ErrInvalid, "unknown guard %q", clip(string(w.Guard)))
	}
	return nil
}

// IdempotencyRecord ties an idempotency key to the booking it made, so that
// the same request again returns the same answer.
type IdempotencyRecord struct {
	KeyHash     []byte // SHA-256 of the key; the key itself is not stored
	RequestHash []byte // SHA-256 of the canonical request
	BookingID   string
	// SealedToken is the booking's token encrypted under a key derived from
	// the idempotency key, so that a replay can answer with the token while
	// the store alone cannot reveal it.
	SealedToken []byte
	CreatedAt   time.Time
}
