package reservation

import (
	"context"
	"errors"
	"fmt"

	"strings"

	"time"
)

// Best available: the customer asks for a number of seats, optionally side
// by side, and the server picks the best free ones. Under contention many
// requests want the same best seats at once, so a request must never queue
// behind another for a seat: it tries each candidate's locks without
// waiting, and a seat someone else is taking is skipped like a booked one.
// Only when no suitable set is left that nobody else is taking is the
// answer ErrSoldOut.
//
// The order, best first (docs/api.md restates it):
//   - rows by their distance from the middle row (for an even number of
//     rows the two middle rows tie); a tie goes to the row further back
//     (the later letter);
//   - within a row, seats by their distance from the middle of the row; a
//     tie goes to the lower number;
//   - adjacent seats: a block of count consecutive seats in one row, rows
//     in the order above, then blocks by the distance of their centre from
//     the middle of the row, a tie to the lower first number;
//   - seats that need not be adjacent: the count best single seats in the
//     order above, so they may span rows;
//   - either way, a set that leaves a single free seat alone in its row
//     comes only when no set of the count leaves none (see stranded.go).

// SeatsBusyError says which seats' locks someone else holds. It matches
// ErrSeatBusy with errors.Is.
type SeatsBusyError struct {
	Seats []string
}

func (e *SeatsBusyError) Error() string {
	return fmt.Sprintf("seats being taken by someone else: %s", strings.Join(e.Seats, ", "))
}

// Is makes errors.Is(err, ErrSeatBusy) true.
func (e *SeatsBusyError) Is(target error) bool { return target == ErrSeatBusy }

// SeatTryLocker is a SeatLocker that can take the seats' locks without
// waiting. A best-available request uses it to skip seats that another
// request is taking; a locker that is not one is waited for, as a booking
// of named seats would.
type SeatTryLocker interface {
	// TryLockSeats takes the locks of the given seats (sorted, distinct),
	// all or nothing, without waiting for any held by someone else. When
	// one was held it holds none and returns a *SeatsBusyError naming the
	// seats it found held (an empty list when they came free while it
	// looked); it returns ErrUnavailable when the backend cannot be
	// reached.
	TryLockSeats(ctx context.Context, screeningID string, seats []string) (SeatLease, error)
}

// search finds the best free seats for a best-available request and runs
// attempt on them. attempt takes the seats' locks without waiting, checks
// them and writes; it returns an error wrapping ErrSeatBusy when a lock was
// held, ErrSeatTaken or ErrSeatHeld when a seat turned out unavailable, in
// which cases search goes on with the next candidate. Any other error, or
// success, ends the search. It returns ErrSoldOut when no candidate is
// left, and ErrSeatBusy when the lock wait passes before one succeeds.
func (s *Service) search(ctx context.Context, sc Screening, count int, adjacent bool, attempt func(seats []string) error) error {
	width := 1
	if adjacent {
		width = count
	}
	p := &picker{sc: sc, count: count, adjacent: adjacent,
		order: s.orders.get(sc.Rows, sc.SeatsPerRow, width), skip: make([]bool, sc.Capacity())}
	if err := s.markUnavailable(ctx, p); err != nil {
		return err
	}
	deadline := time.Now().Add(s.opts.LockWait)
	busy := 0
	for {
		set := p.candidate()
		if set == nil {
			return soldOut(sc.ID, count, adjacent, busy > 0)
		}
		if time.Now().After(deadline) {
			return &messageError{kind: ErrSeatBusy, msg: fmt.Sprintf("no free seats could be had within the lock wait of %v; try again", s.opts.LockWait)}
		}
		err := attempt(set)
		var busySeats *SeatsBusyError
		var taken *SeatsTakenError
		var heldErr *SeatsHeldError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &busySeats):
			// Someone is taking these: never wait, try the next best. An
			// empty list (the lock came free again while the locker
			// looked for the busy one) tries the same seats again.
			busy++
			p.mark(busySeats.Seats)
		case errors.Is(err, ErrSeatBusy):
			// A locker that cannot tell which seat was busy.
			busy++
			p.mark(set)
		case errors.As(err, &taken):
			p.mark(taken.Seats)
			if err := s.markUnavailable(ctx, p); err != nil {
				return err
			}
		case errors.As(err, &heldErr):
			p.mark(heldErr.Seats)
			if err := s.markUnavailable(ctx, p); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// markUnavailable puts the seats booked or held now into p's skip. search
// runs it again when a candidate turns out taken: under contention the map
// read at the start grows stale fast, and one read is cheaper than trying
// every seat others took since, one candidate at a time.
//
// The holds are read before the bookings, in two reads that are not one
// snapshot. A seat only ever goes from held to booked (a confirm), never
// back, so a seat held at the first read and confirmed before the second
// is in one of the two. Read the other way round, that seat would be in
// neither and look free: the picker would then leave its free neighbour
// alone beside it, believing the two a pair (a stranded seat the rule
// forbids).
func (s *Service) markUnavailable(ctx context.Context, p *picker) error {
	held, err := s.store.SeatHolds(ctx, p.sc.ID)
	if err != nil {
		return err
	}
	booked, err := s.store.BookedSeats(ctx, p.sc.ID)
	if err != nil {
		return err
	}
	for id := range held {
		p.mark([]string{id})
	}
	for id := range booked {
		p.mark([]string{id})
	}
	return nil
}

// soldOut is the ErrSoldOut of a search that has no candidate left; busy
// says that some were skipped because someone else was taking them.
func soldOut(screeningID string, count int, adjacent, busy bool) error {
	what := fmt.Sprintf("%d free seats", count)
	if adjacent && count > 1 {
		what = fmt.Sprintf("%d free seats side by side", count)
	}
	msg := fmt.Sprintf("screening %s has no %s left", screeningID, what)
	if busy {
		msg += " that nobody else is taking"
	}
	return &messageError{kind: ErrSoldOut, msg: msg}
}

// tryLock takes the seats' locks of the screening's strategy without
// waiting where the locker can (see SeatTryLocker), else waiting at most
// the lock wait.
func (s *Service) tryLock(ctx context.Context, sc Screening, seats []string) (SeatLease, error) {
	if sc.Lock == LockNone {
		return noLease{}, nil
	}
	if t, ok := s.opts.Lockers[sc.Lock].(SeatTryLocker); ok {
		return t.TryLockSeats(ctx, sc.ID, seats)
	}
	return s.lock(ctx, sc, seats)
}

// validateBest checks a best-available request: a count of 1 to
// MaxSeatsPerBooking, no seats named, a valid customer.
func validateBest(sc Screening, count int, customer string) error {
	if count < 1 || count > MaxSeatsPerBooking {
		return invalidf("count must be from 1 to %d", MaxSeatsPerBooking)
	}
	if count > sc.Capacity() {
		return invalidf("count %d is more than the %d seats of screening %s", count, sc.Capacity(), sc.ID)
	}
	if err := validText(customer, MaxCustomerLen); err != nil {
		return invalidf("customer %s", err)
	}
	return nil
}

// bestRequest checks the shape of a request that may be best available:
// seats or a count, never both, never neither; adjacent only with a count.
func bestRequest(seats []string, count int, adjacent bool) (best bool, err error) {
	switch {
	case len(seats) > 0 && count != 0:
		return false, invalidf("send either seats or count, not both")
	case len(seats) == 0 && count == 0:
		if adjacent {
			return false, invalidf("adjacent needs a count")
		}
		return false, invalidf("send seats (1 to %d seat ids) or count (1 to %d)", MaxSeatsPerBooking, MaxSeatsPerBooking)
	case adjacent && count == 0:
		return false, invalidf("adjacent goes with count, not with seats")
	}
	return count != 0, nil
}

// bookBest books the best count seats available for req: each candidate
// runs the critical section of a booking (try the locks, check, pay,
// write), and a candidate that someone else is taking or took is skipped.
func (s *Service) bookBest(ctx context.Context, sc Screening, req BookRequest) (Confirmation, error) {
	if err := validateBest(sc, req.Count, req.Customer); err != nil {
		return Confirmation{}, err
	}
	// The request, not the seats it got, is what a retry repeats.
	idem := newIdempotency(req.IdempotencyKey, []string{fmt.Sprintf("count=%d adjacent=%t", req.Count, req.Adjacent)}, req.Customer)
	if c, ok, err := s.replay(ctx, s.store, sc.ID, idem, nil); ok || err != nil {
		return c, err
	}
	var c Confirmation
	err := s.search(ctx, sc, req.Count, req.Adjacent, func(seats []string) (err error) {
		lease, err := s.tryLock(ctx, sc, seats)
		if err != nil {
			return err
		}
		defer s.release(ctx, lease)
		store := s.storeOf(lease)
		if err := checkFree(ctx, store, sc.ID, seats); err != nil {
			return err
		}
		c, err = s.payAndWrite(ctx, store, sc, seats, req.Customer, lease, idem)
		return err
	})
	return c, err
}

// holdBest holds the best count seats available for req, skipping those
// that someone else is taking, as bookBest does.
func (s *Service) holdBest(ctx context.Context, sc Screening, req HoldRequest, w HoldWrite) (Hold, error) {
	if err := validateBest(sc, req.Count, req.Customer); err != nil {
		return Hold{}, err
	}
	var h Hold
	err := s.search(ctx, sc, req.Count, req.Adjacent, func(seats []string) (err error) {
		w.Hold.Seats = seats
		h, err = s.holdSeats(ctx, sc, w, 0)
		return err
	})
	return h, err
}
