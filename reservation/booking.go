package reservation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// BookRequest is a request to book seats: the Seats named, or the best
// Count seats available (side by side when Adjacent; see bestavailable.go).
type BookRequest struct {
	ScreeningID    string
	Seats          []string
	Count          int
	Adjacent       bool
	Customer       string
	IdempotencyKey string // optional
	// QueueToken is the token of an admitted queue entry, which a
	// screening with a waiting room requires (see queue.go).
	QueueToken string
}

// Confirmation is the answer to a successful booking: the booking and its
// secret token, which the customer needs to cancel it and which is shown
// only here.
type Confirmation struct {
	Booking Booking
	Token   string
}

// Book books seats for a customer, all or nothing, in the steps of a
// booking: validate the request, take the seat locks of the screening's
// strategy in the seats' sorted order, check the seats under the locks,
// pay, write through the screening's guard, and release the locks. Under
// LockPostgresXact the locks belong to a transaction of the store, and the
// check and the write go through that transaction (see Tx).
//
// It returns ErrInvalid, ErrNotFound, ErrSeatTaken (a *SeatsTakenError),
// ErrSeatHeld (a *SeatsHeldError),
// ErrSeatBusy when the locks could not be had within the lock wait,
// ErrLockLost when the lock was lost before the write, ErrIdempotencyMismatch,
// ErrNotAdmitted or ErrAdmissionExpired on a screening with a waiting room,
// ErrUnavailable, or the context's error. A request with an idempotency key
// that already made a booking returns that booking's confirmation again
// (see replay).
func (s *Service) Book(ctx context.Context, req BookRequest) (Confirmation, error) {
	sc, err := s.screeningFor(ctx, req.ScreeningID, req.QueueToken)
	if err != nil {
		return Confirmation{}, err
	}
	if best, err := bestRequest(req.Seats, req.Count, req.Adjacent); err != nil || best {
		if err != nil {
			return Confirmation{}, err
		}
		return s.bookBest(ctx, sc, req)
	}
	seats, err := validateBooking(sc, req)
	if err != nil {
		return Confirmation{}, err
	}
	idem := newIdempotency(req.IdempotencyKey, seats, req.Customer)
	if c, ok, err := s.replay(ctx, s.store, sc.ID, idem, nil); ok || err != nil {
		return c, err
	}

	lease, err := s.lock(ctx, sc, seats)
	if err != nil {
		return Confirmation{}, err
	}
	// Deferred calls run last first: the locks are released, then the
	// request is said to have left its critical section.
	defer s.enter(ctx, sc.ID, seats)()
	defer s.release(ctx, lease)
	store := s.storeOf(lease)

	if c, ok, err := s.check(ctx, store, sc, seats, idem); ok || err != nil {
		return c, err
	}
	return s.payAndWrite(ctx, store, sc, seats, req.Customer, lease, idem)
}

// check runs under the seat locks, before the payment. It answers with
// the booking of a twin request (the same Idempotency-Key) that wrote
// while this one waited for the locks (ok), and, where needsCheck says so,
// refuses seats that are booked or held, unless a twin took them (see
// replay). ok false and err nil let the booking pay and write.
func (s *Service) check(ctx context.Context, store bookingStore, sc Screening, seats []string, idem *idempotency) (c Confirmation, ok bool, err error) {
	if c, ok, err := s.replay(ctx, store, sc.ID, idem, nil); ok || err != nil {
		return c, ok, err
	}
	if !s.needsCheck(sc) {
		return Confirmation{}, false, nil
	}
	if err := checkFree(ctx, store, sc.ID, seats); err != nil {
		if c, ok, rerr := s.replay(ctx, store, sc.ID, idem, err); ok || rerr != nil {
			return c, ok, rerr
		}
		return Confirmation{}, false, err
	}
	return Confirmation{}, false, nil
}

// needsCheck reports whether a booking of sc checks its seats before it
// pays and writes, or leaves the check to its write.
//
// A booking that pays checks: the check spares a customer a charge (and a
// refund) for seats that are gone. Without a payment nothing happens
// between check and write, and the fenced write refuses seats in use with
// the same errors, taken before held: so the write is the check, and a
// booking is one round trip to the store instead of two. A blind write
// (GuardOff) refuses nothing, so there the check stays: without it a seat
// booked long ago would be booked again, not only in a race.
func (s *Service) needsCheck(sc Screening) bool {
	return s.pays(sc) || sc.Guard != GuardFence
}

// pays reports whether a booking of sc pays inside its critical section:
// through a provider, or a simulated payment that takes time.
func (s *Service) pays(sc Screening) bool {
	return s.opts.Payments != nil || sc.PaymentDelay > 0
}

// validateBooking checks a booking request against the screening and returns
// its seats sorted.
func validateBooking(sc Screening, req BookRequest) ([]string, error) {
	if len(req.Seats) == 0 || len(req.Seats) > MaxSeatsPerBooking {
		return nil, invalidf("seats must list 1 to %d seats", MaxSeatsPerBooking)
	}
	if err := validText(req.Customer, MaxCustomerLen); err != nil {
		return nil, invalidf("customer %s", err)
	}
	seats := slices.Clone(req.Seats)
	for _, id := range seats {
		if _, _, err := ParseSeatID(id); err != nil {
			return nil, &messageError{kind: ErrInvalid, msg: err.Error()}
		}
		if !sc.HasSeat(id) {
			return nil, invalidf("seat %q is not in screening %s (%d rows of %d seats)", id, sc.ID, sc.Rows, sc.SeatsPerRow)
		}
	}
	sortSeats(seats)
	for i := 1; i < len(seats); i++ {
		if seats[i] == seats[i-1] {
			return nil, invalidf("seat %q is listed twice", seats[i])
		}
	}
	return seats, nil
}

// sortSeats puts seat ids in their one canonical order (row, then number), the
// order in which every booking takes its locks, so that two bookings with
// overlapping seats can never wait for each other in a cycle.
func sortSeats(seats []string) {
	slices.SortFunc(seats, func(a, b string) int {
		ra, na, _ := ParseSeatID(a)
		rb, nb, _ := ParseSeatID(b)
		if ra != rb {
			return int(ra) - int(rb)
		}
		return na - nb
	})
}

// lock takes the seat locks of the screening's strategy, waiting at most the
// service's lock wait.
func (s *Service) lock(ctx context.Context, sc Screening, seats []string) (SeatLease, error) {
	if sc.Lock == LockNone {
		return noLease{}, nil
	}
	locker, ok := s.opts.Lockers[sc.Lock]
	if !ok {
		return nil, fmt.Errorf("screening %s: lock strategy %q is not offered by this server: %w", sc.ID, sc.Lock, ErrUnavailable)
	}
	wait, cancel := context.WithTimeout(ctx, s.opts.LockWait)
	defer cancel()
	lease, err := locker.LockSeats(wait, sc.ID, seats)
	switch {
	case err == nil:
		return lease, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrSeatBusy):
		return nil, &messageError{kind: ErrSeatBusy, msg: fmt.Sprintf("seats %s are being booked by someone else; try again", strings.Join(seats, ", "))}
	default:
		return nil, err
	}
}

// release gives the locks up. It runs after the request may have been
// cancelled, so it uses a context of its own: a lock left behind would
// block the seat until its lease ran out.
func (s *Service) release(ctx context.Context, lease SeatLease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		s.opts.Logger.Warn("releasing seat locks", "err", err)
	}
}

// payAndWrite pays for the booking and records it in store through the
// screening's guard. Through a provider, the payment is money and is
// recorded first (chargeAndWrite); the simulated payment is a wait.
func (s *Service) payAndWrite(ctx context.Context, store bookingStore, sc Screening, seats []string, customer string, lease SeatLease, idem *idempotency) (Confirmation, error) {
	if s.opts.Payments != nil {
		return s.chargeAndWrite(ctx, store, sc, seats, customer, lease, idem)
	}
	w, c, err := s.newWrite(sc, uuid.NewString(), seats, customer, lease, idem)
	if err != nil {
		return Confirmation{}, err
	}
	if err := simulatePayment(ctx, sc.PaymentDelay, lease); err != nil {
		return s.written(ctx, sc.ID, c, idem, lease, err)
	}
	return s.written(ctx, sc.ID, c, idem, lease, store.Book(ctx, w))
}

// newWrite builds the write of a new booking with the id, with the lease's
// fencing tokens, and the confirmation to answer once it is written.
func (s *Service) newWrite(sc Screening, bookingID string, seats []string, customer string, lease SeatLease, idem *idempotency) (Write, Confirmation, error) {
	token, tokenHash, err := newToken()
	if err != nil {
		return Write{}, Confirmation{}, err
	}
	b := Booking{
		ID:          bookingID,
		ScreeningID: sc.ID,
		Seats:       seats,
		Customer:    customer,
		Status:      BookingConfirmed,
		CreatedAt:   s.opts.Now().UTC().Truncate(time.Microsecond),
	}
	w := Write{Booking: b, TokenHash: tokenHash, Guard: sc.Guard, Fences: fencesOf(lease, seats)}
	if idem != nil {
		rec, err := idem.record(b.ID, token, b.CreatedAt)
		if err != nil {
			return Write{}, Confirmation{}, err
		}
		w.Idempotency = &rec
	}
	return w, Confirmation{Booking: b, Token: token}, nil
}

// written turns the outcome of a booking's write into the answer: c when
// the write succeeded (err == nil), and tells the event publisher; the
// booking of a twin request when one refused it (see replay); else the
// refusal, after raising lease's fences past a stale refusal's.
func (s *Service) written(ctx context.Context, screeningID string, c Confirmation, idem *idempotency, lease SeatLease, err error) (Confirmation, error) {
	switch {
	case err == nil:
		s.publish(ctx, EventBooked, c.Booking)
		return c, nil
	case errors.Is(err, ErrStaleToken):
		return Confirmation{}, s.staleRefusal(ctx, lease, err)
	}
	// A refused write has rolled back, so a replay reads through the store.
	if c, ok, rerr := s.replay(ctx, s.store, screeningID, idem, err); ok || rerr != nil {
		return c, rerr
	}
	if errors.Is(err, ErrPaymentSettled) {
		return Confirmation{}, fmt.Errorf("the payment was settled before the booking could be written, so nothing was booked and nothing is owed; try again: %w", ErrUnavailable)
	}
	return Confirmation{}, err
}

// noLease is the lease of LockNone: nothing held, nothing to lose.
type noLease struct{}

func (noLease) Fence(string) int64                                  { return 0 }
func (noLease) RaiseFences(context.Context, map[string]int64) error { return nil }
func (noLease) Lost() <-chan struct{}                               { return nil }
func (noLease) Tx() Tx                                              { return nil }
func (noLease) Release(context.Context) error                       { return nil }
