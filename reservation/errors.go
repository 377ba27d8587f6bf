package reservation

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Errors of the booking domain. Every error the Service returns wraps exactly
// one of them (test with errors.Is); the HTTP layer maps each to a status and
// an error code in one table. Store implementations translate their driver's
// errors into these at the boundary.
var (
	// ErrInvalid is returned for a request that breaks a rule of the
	// contract: a malformed seat id, too many seats, an empty customer.
	ErrInvalid = errors.New("invalid request")

	// ErrNotFound is returned when a screening or booking does not exist.
	ErrNotFound = errors.New("not found")

	// ErrConflict is returned when a screening with the same id exists, and
	// by a Store when an idempotency key was used already.
	ErrConflict = errors.New("conflict")

	// ErrSeatTaken is returned when a requested seat is booked. The error
	// is a *SeatsTakenError that lists the seats.
	ErrSeatTaken = errors.New("seat taken")

	// ErrSeatBusy is returned when a seat's lock could not be had within
	// the service's lock wait.
	ErrSeatBusy = errors.New("seat busy")

	// ErrLockLost is returned when a booking's distributed lock was lost
	// before its write (the lease could not be renewed), or when the write
	// carried a fencing token older than one the seat has already seen.
	// Nothing was written.
	ErrLockLost = errors.New("lock lost")

	// ErrStaleToken is returned by a Store when a fenced write carries a
	// token that is not newer than the seat's last one, as a
	// *StaleTokenError. The Service turns it into ErrLockLost.
	ErrStaleToken = errors.New("stale fencing token")

	// ErrIdempotencyMismatch is returned when an idempotency key is reused
	// with a different request.
	ErrIdempotencyMismatch = errors.New("idempotency key reused with a different request")

	// ErrUnauthorized is returned when a secret (booking token, admin
	// token) is required and missing.
	ErrUnauthorized = errors.New("unauthorized")

	// ErrForbidden is returned when a secret was given but is wrong.
	ErrForbidden = errors.New("forbidden")

	// ErrLimit is returned when a request would pass a bound of the
	// service (Options.MaxScreenings): nothing was created. Unlike
	// ErrUnavailable it does not clear in seconds, only as screenings
	// play (PlayedAfter).
	ErrLimit = errors.New("limit reached")

	// ErrUnavailable is returned when a backend (the store or the lock
	// service) cannot be reached. Nothing was booked.
	ErrUnavailable = errors.New("backend unavailable")
)

// ErrPaymentVoided is returned by Payments.Charge when the payment was
// settled (voided by a refund of its id) before its charge completed:
// nothing was charged.
var ErrPaymentVoided = errors.New("payment voided")

// ErrPaymentSettled is returned by a Store when a write names a payment
// (Write.PaymentID) that is no longer pending: it was refunded or voided
// (the reconciler settled it, or an earlier attempt of the same request
// did), or it paid for another booking. Nothing was written.
var ErrPaymentSettled = errors.New("payment settled already")

// ErrWriteInDoubt is returned by a Store when a write was sent to commit and
// no answer came back (the connection died, the context ended): it may
// have committed or not. It matches ErrUnavailable. A paid booking's
// payment tells which (see Service.settle).
var ErrWriteInDoubt = fmt.Errorf("%w: the outcome of the commit is unknown", ErrUnavailable)

// SeatsTakenError lists the requested seats that are booked already. It
// matches ErrSeatTaken with errors.Is.
type SeatsTakenError struct {
	Seats []string
}

func (e *SeatsTakenError) Error() string {
	return fmt.Sprintf("seats already booked: %s", strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatTaken) true.
func (e *SeatsTakenError) Is(target error) bool { return target == ErrSeatTaken }

// StaleTokenError is a fenced write refused because its tokens are not
// newer than the fences its free seats have seen. Seen holds, for each of
// the write's seats that is free, the newest fence it was written with. It
// matches ErrStaleToken with errors.Is.
type StaleTokenError struct {
	Seen map[string]int64
}

func (e *StaleTokenError) Error() string {
	seats := slices.Sorted(maps.Keys(e.Seen))
	parts := make([]string, len(seats))
	for i, seat := range seats {
		parts[i] = fmt.Sprintf("%s has seen fence %d", seat, e.Seen[seat])
	}
	return fmt.Sprintf("stale fencing token: %s", strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrStaleToken) true.
func (e *StaleTokenError) Is(target error) bool { return target == ErrStaleToken }

// invalidf returns an error wrapping ErrInvalid with a message for the
// client.
func invalidf(format string, args ...any) error {
	return errorf(ErrInvalid, format, args...)
}

// errorf returns an error wrapping kind, one of the domain's errors, with a
// message for the client (see Message).
func errorf(kind error, format string, args ...any) error {
	return &messageError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// messageError carries a message meant for the client together with the
// domain error it is a kind of.
type messageError struct {
	kind error
	msg  string
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.kind }

// notFound is ErrNotFound with a message that names what is missing, in
// the domain's words rather than a store's.
func notFound(what, id string) error {
	return errorf(ErrNotFound, "%s %q does not exist", what, clipID(id))
}

// clipID keeps a client's id short enough to quote back in a message.
func clipID(id string) string {
	const max = 64
	if len(id) > max {
		return id[:max] + "..."
	}
	return id
}

// Message returns the text of err that a client may read: the message the
// domain made it with (the rule a request broke, the seats that are
// taken, what does not exist), or else the description of the domain error
// it wraps (ErrConflict's "conflict"). It never returns the text that
// wraps a domain error on its way up: that names stores, drivers and
// operations ("memory: ...", "postgres: book: ..."), which are the server's
// business. It returns "" for an error that wraps no domain error.
func Message(err error) string {
	var m *messageError
	if errors.As(err, &m) {
		return m.msg
	}
	// The errors that name seats say which, in the domain's words.
	var taken *SeatsTakenError
	var held *SeatsHeldError
	var busy *SeatsBusyError
	var waiting *NotAdmittedError
	switch {
	case errors.As(err, &waiting):
		return waiting.Error()
	case errors.As(err, &taken):
		return taken.Error()
	case errors.As(err, &held):
		return held.Error()
	case errors.As(err, &busy):
		return busy.Error()
	}
	for _, kind := range []error{
		ErrInvalid, ErrNotFound, ErrConflict, ErrSeatTaken, ErrSeatHeld, ErrSeatBusy, ErrSoldOut,
		ErrHoldExpired, ErrLockLost, ErrStaleToken, ErrIdempotencyMismatch, ErrUnauthorized,
		ErrForbidden, ErrLimit, ErrNoQueue, ErrNotAdmitted, ErrAdmissionExpired, ErrUnavailable,
	} {
		if errors.Is(err, kind) {
			return kind.Error()
		}
	}
	return ""
}
