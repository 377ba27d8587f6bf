package reservation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A hold keeps seats for a customer for a while, in the data, so that no
// lock has to be held while the customer pays: the lock is taken only for
// the moment it takes to check the seats and write the hold, exactly like a
// booking's critical section without the payment. The hold then protects
// the seats by itself until it expires, by the store's clock, with no
// process involved: a store treats a hold as live while now < ExpiresAt,
// and as nothing at all from that moment on.

// HoldStatus says where a hold is in its life.
type HoldStatus string

// Hold statuses. A store keeps only HoldHeld, HoldConfirmed and
// HoldReleased; HoldExpired is how a store reports a hold that is still
// HoldHeld in its data but whose expiry has passed.
const (
	HoldHeld      HoldStatus = "held"
	HoldConfirmed HoldStatus = "confirmed"
	HoldReleased  HoldStatus = "released"
	HoldExpired   HoldStatus = "expired"
)

// Limits of a hold's length (a screening's HoldTTL).
const (
	MinHoldTTL     = time.Second
	MaxHoldTTL     = time.Hour
	DefaultHoldTTL = 10 * time.Minute
)

// Hold is a customer's claim on seats of a screening until ExpiresAt.
type Hold struct {
	ID          string
	ScreeningID string
	Seats       []string // sorted
	Customer    string
	Status      HoldStatus
	CreatedAt   time.Time
	ExpiresAt   time.Time
	BookingID   string // set once confirmed
}

// HoldWrite is everything a HoldStore needs to record a new hold. The store
// sets the hold's CreatedAt to its own now and ExpiresAt to now + TTL: the
// one clock that decides expiry is the store's.
type HoldWrite struct {
	Hold      Hold // Status, CreatedAt and ExpiresAt are set by the store
	TokenHash []byte
	TTL       time.Duration
	// Fences holds each seat's fencing token from its lock, as in Write;
	// a seat with no entry (or 0) is written without a fence check.
	Fences map[string]int64
}

// Validate refuses a hold write that no store could record, with
// ErrInvalid: an id that is not a uuid, no seats or a seat twice, a TTL
// that is not positive.
func (w HoldWrite) Validate() error {
	h := w.Hold
	if uuid.Validate(h.ID) != nil {
		return fmt.Errorf("hold id %q is not a uuid: %w", clip(h.ID), ErrInvalid)
	}
	if len(h.Seats) == 0 {
		return fmt.Errorf("hold has no seats: %w", ErrInvalid)
	}
	seen := make(map[string]bool, len(h.Seats))
	for _, seat := range h.Seats {
		if seen[seat] {
			return fmt.Errorf("seat %q is listed twice: %w", clip(seat), ErrInvalid)
		}
		seen[seat] = true
	}
	if w.TTL <= 0 {
		return fmt.Errorf("hold ttl %v is not positive: %w", w.TTL, ErrInvalid)
	}
	return nil
}

// HoldStore is the part of a Store that keeps holds. Every method judges
// expiry by the store's own clock, so that all instances of the API agree
// on the moment a hold ends.
type HoldStore interface {
	// CreateHold records a new live hold on the seats, all or nothing, and
	// returns it as stored. A seat is given only if it is not booked (else
	// *SeatsTakenError naming every such seat), not held by a live hold
	// (else *SeatsHeldError), and, when its fence is not 0, only if the
	// fence is greater than the seat's last one (else ErrStaleToken). The
	// check is the write's own, whatever the screening's guard: a hold
	// that could be written over a booked seat would protect nothing. It
	// returns ErrNotFound for an unknown screening, ErrConflict when the
	// hold id was used before, ErrInvalid for a write HoldWrite.Validate
	// refuses.
	CreateHold(ctx context.Context, w HoldWrite) (Hold, error)

	// Hold returns the hold with the id and the hash of its token, or
	// ErrNotFound. A hold still held whose expiry has passed is returned
	// with Status HoldExpired.
	Hold(ctx context.Context, id string) (Hold, []byte, error)

	// ConfirmHold turns a live hold into the booking w, in one transaction:
	// the booking is written, the hold's seats go to it, and the hold
	// becomes HoldConfirmed with the booking's id. w.Booking must be for
	// the hold's screening and seats. Nothing is written when it returns an
	// error: ErrNotFound for an unknown hold, ErrHoldExpired when the hold
	// has expired (even if nobody took its seats), ErrConflict when the
	// hold is confirmed or released already (read the hold to tell which),
	// ErrInvalid for a w that does not match the hold. A w with a PaymentID
	// books that payment in the same transaction, as Store.Book does, and
	// fails with ErrPaymentSettled when it is not pending.
	ConfirmHold(ctx context.Context, holdID string, w Write) error

	// ReleaseHold ends a hold and frees its seats, and returns the status
	// the hold had before. Releasing a hold that is released or expired
	// already changes nothing. It returns ErrNotFound for an unknown hold
	// and ErrConflict (with status HoldConfirmed) when it was confirmed.
	ReleaseHold(ctx context.Context, id string) (HoldStatus, error)

	// SeatsInUse returns which of the given seats of a screening are
	// booked (taken) and which are held by a live hold (held), each in the
	// order given: the check before a booking's payment or a hold's write,
	// in one round trip.
	SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error)

	// SeatHolds returns the seats of a screening held by a live hold, each
	// mapped to the moment its hold expires. It does not check that the
	// screening exists.
	SeatHolds(ctx context.Context, screeningID string) (map[string]time.Time, error)
}

// ErrSeatHeld is returned when a requested seat is held by someone else's
// live hold. The error is a *SeatsHeldError that lists the seats.
var ErrSeatHeld = errors.New("seat held")

// ErrSoldOut is returned by a best-available request when no set of free
// seats that suits it exists.
var ErrSoldOut = errors.New("sold out")

// ErrHoldExpired is returned when a hold is confirmed after its expiry.
var ErrHoldExpired = errors.New("hold expired")

// SeatsHeldError lists the requested seats that someone else holds. It
// matches ErrSeatHeld with errors.Is.
type SeatsHeldError struct {
	Seats []string
}

func (e *SeatsHeldError) Error() string {
	return fmt.Sprintf("seats held by someone else: %s", strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatHeld) true.
func (e *SeatsHeldError) Is(target error) bool { return target == ErrSeatHeld }
