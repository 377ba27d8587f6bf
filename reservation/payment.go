package reservation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Payments charges a customer for the seats of a booking. The charge runs
// inside the critical section, while the seat locks are held: it is the side
// effect the locks exist to protect. Two holders of one seat at once means
// two customers charged for one seat, even when the guarded write keeps the
// seat map right, and one of them has to be refunded.
//
// Without Payments the Service simulates the payment with a wait of the
// screening's payment delay.
type Payments interface {
	// Charge charges for c and returns the provider's id of the charge. It
	// returns an error wrapping ErrLockLost when the provider refused a
	// fencing token older than one it has seen for a seat (the caller is
	// no longer the newest lock holder), ErrUnavailable when the provider
	// cannot be reached or failed, or an error wrapping ctx.Err().
	Charge(ctx context.Context, c Charge) (chargeID string, err error)

	// Refund gives a charge back. It returns ErrUnavailable when the
	// provider cannot be reached or failed.
	Refund(ctx context.Context, chargeID string) error
}

// Charge is what a booking pays for.
type Charge struct {
	BookingID   string
	ScreeningID string
	Seats       []string
	Customer    string
	// Fences are the fencing tokens of the seats' locks, for a provider
	// that checks them; seats whose strategy has none are absent.
	Fences map[string]int64
	// Delay is how long the provider takes to answer: the screening's
	// payment delay.
	Delay time.Duration
}

// pay runs the payment of the write w while lease holds its seats, and
// returns the charge id ("" for the simulated payment). It ends early, with
// ErrLockLost, when the lock is lost, and with the context's error when the
// request is cancelled. Whatever pay returns, a charge that went through is
// in the returned id, so that the caller can refund it when the booking is
// not confirmed after all.
func (s *Service) pay(ctx context.Context, sc Screening, w Write, lease SeatLease) (string, error) {
	if s.opts.Payments == nil {
		return "", simulatePayment(ctx, sc.PaymentDelay, lease)
	}
	// A holder that knows its lock is lost does not start a charge, as the
	// simulated payment does not start its wait.
	if err := lockHeld(lease); err != nil {
		return "", err
	}
	// The charge is cancelled when the lock is lost: a holder that is no
	// longer the holder must not go on paying. Not at the same instant,
	// though (see lostGrace).
	charge, stop := whileHeld(ctx, lease)
	id, err := s.opts.Payments.Charge(charge, Charge{
		BookingID:   w.Booking.ID,
		ScreeningID: sc.ID,
		Seats:       w.Booking.Seats,
		Customer:    w.Booking.Customer,
		Fences:      w.Fences,
		Delay:       sc.PaymentDelay,
	})
	lost := stop()
	switch {
	case err == nil && lost:
		return id, errorf(ErrLockLost, "seat lock lost during payment")
	case err == nil:
		return id, lockHeld(lease)
	case lost:
		return "", errorf(ErrLockLost, "seat lock lost during payment")
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, ErrLockLost), errors.Is(err, ErrUnavailable):
		return "", err
	default:
		return "", fmt.Errorf("payment: %w: %w", ErrUnavailable, err)
	}
}

// refund gives back the charge of a booking that was not confirmed. It runs
// after the request may have been cancelled, so it uses a context of its
// own: a charge left behind is money taken for nothing.
func (s *Service) refund(ctx context.Context, chargeID, bookingID string) {
	if chargeID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.opts.Payments.Refund(ctx, chargeID); err != nil {
		s.opts.Logger.Error("refunding the charge of an unconfirmed booking", "charge_id", chargeID, "booking_id", bookingID, "err", err)
	}
}

// inDoubtWait bounds how long settleFailedWrite looks for a booking whose
// write may have committed.
const inDoubtWait = 10 * time.Second

// settleFailedWrite decides what a failed write of a paid booking means,
// refunds the charge when the booking was not written, and returns the
// booking's outcome: nil when it was written after all, else writeErr.
//
// A refusal (the seat taken, a stale fence, bad input) or a store out of
// reach before the commit is an answer: nothing was written, and the
// charge is refunded. ErrWriteInDoubt is not: the connection died, or the
// request ended, after COMMIT was sent and before its answer came back,
// and the booking may be in the database. Refunding it would leave a confirmed
// seat unpaid; answering an error would hide a booking the customer has.
// So the booking is looked for, for up to inDoubtWait while the store
// stays unavailable: found, the write succeeded; not found, the charge is
// refunded. When the store stays out of reach the outcome is unknown: the
// charge is neither refunded nor kept silently, but logged as an error
// with both ids for reconciliation, and the answer is writeErr (503).
func (s *Service) settleFailedWrite(ctx context.Context, chargeID, bookingID string, writeErr error) error {
	if !errors.Is(writeErr, ErrWriteInDoubt) {
		s.refund(ctx, chargeID, bookingID)
		return writeErr
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), inDoubtWait)
	defer cancel()
	pause := 50 * time.Millisecond
	for {
		_, _, err := s.store.Booking(ctx, bookingID)
		switch {
		case err == nil:
			s.opts.Logger.Warn("a booking's write failed after it committed: confirmed", "booking_id", bookingID, "err", writeErr)
			return nil
		case errors.Is(err, ErrNotFound):
			s.refund(ctx, chargeID, bookingID)
			return writeErr
		}
		select {
		case <-ctx.Done():
			if chargeID != "" {
				s.opts.Logger.Error("a paid booking's write is in doubt: neither confirmed nor refunded; reconcile",
					"charge_id", chargeID, "booking_id", bookingID, "write_err", writeErr, "lookup_err", err)
			}
			return writeErr
		case <-time.After(pause):
			pause = min(2*pause, time.Second)
		}
	}
}

// simulatePayment is the payment without a provider: a wait of the payment
// delay. It ends early when the lock is lost or the request is cancelled.
func simulatePayment(ctx context.Context, delay time.Duration, lease SeatLease) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-lease.Lost():
			return errorf(ErrLockLost, "seat lock lost during payment")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return lockHeld(lease)
}

// lockHeld returns ErrLockLost when the lease has been lost.
func lockHeld(lease SeatLease) error {
	select {
	case <-lease.Lost():
		return errorf(ErrLockLost, "seat lock lost before the write")
	default:
		return nil
	}
}

// lostGrace is how long a charge in progress may still answer after the
// lock was lost, before its request is cancelled. A holder paused past its
// lease (a stopped process, a long GC) wakes up with the provider's answer
// already waiting in its socket and its lease already gone: cancelling at
// once would drop that answer, and with it the id of a charge that went
// through, which could then never be refunded. A moment's grace lets the
// answer be read and the charge refunded; a charge still in progress is
// cancelled after it, as before. (A charge completing at the very instant
// of the cancel can still be missed: only a refund by booking id would
// close that, and the provider's contract has none.) The grace is part of
// StopTime, which lock services must allow for.
const lostGrace = 100 * time.Millisecond

// StopTime is how long the service may still act under a seat lock after
// the lock's Lost channel was closed: lostGrace, then the moment it takes
// the cancelled charge to end (50ms, ample on one network). A lock service
// that may hand a lost lock on sooner than StopTime after telling its
// holder lets two holders pay at once; so a distributed lock must declare
// its loss at least StopTime before its lease can end on the server
// (cmd/api sets the lockers' StopMargin to it).
const StopTime = lostGrace + 50*time.Millisecond

// whileHeld returns a context that ends when ctx does, or lostGrace after the
// lease is lost, and stop, which ends the watch and reports whether the
// lease was lost before it. The watching goroutine is gone when stop
// returns.
func whileHeld(ctx context.Context, lease SeatLease) (context.Context, func() (lost bool)) {
	lostc := lease.Lost()
	if lostc == nil {
		return ctx, func() bool { return false }
	}
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-lostc:
		case <-done:
			return
		}
		select {
		case <-time.After(lostGrace):
			cancel()
		case <-done:
		}
	})
	return held, func() bool {
		close(done)
		wg.Wait()
		cancel()
		select {
		case <-lostc:
			return true
		default:
			return false
		}
	}
}
