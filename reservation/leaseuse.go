// What a booking does with its lease while it pays: carry its fences,
// watch for its loss, stop in time.

package reservation

import (
	"context"
	"errors"
	"time"
)

// sleep waits d, or until ctx ends (its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fencesOf returns the fencing tokens lease holds for the seats; seats
// whose strategy has none are absent.
func fencesOf(lease SeatLease, seats []string) map[string]int64 {
	fences := make(map[string]int64, len(seats))
	for _, seat := range seats {
		if f := lease.Fence(seat); f != 0 {
			fences[seat] = f
		}
	}
	return fences
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

// staleRefusal answers a write that the guard refused because lease's
// fencing tokens were not newer than the fences its free seats had seen
// (err, a *StaleTokenError). Either a newer holder wrote those seats and
// this lease was lost, or the lock service issued old tokens: it lost its
// fence counters and issues tokens from its clock, which is behind the
// tokens it issued before. A retry would meet the same refusal until that
// clock caught up, so the lease's lock service raises its counters past
// what the seats have seen, and the client's next attempt gets newer
// tokens. The raise outlives the request, like a release.
func (s *Service) staleRefusal(ctx context.Context, lease SeatLease, err error) error {
	const why = "a newer lock holder has written these seats, or the lock service lost its fence counters " +
		"while its clock is behind: they have seen newer fencing tokens than this request's locks carry; "
	var stale *StaleTokenError
	if !errors.As(err, &stale) {
		return errorf(ErrLockLost, why+"try again")
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if rerr := lease.RaiseFences(rctx, stale.Seen); rerr != nil {
		s.opts.Logger.Warn("raising fence counters past a stale refusal", "err", rerr)
		return errorf(ErrLockLost, why+"raising its counters failed, so a retry may be refused the same way")
	}
	return errorf(ErrLockLost, why+"the lock's fence counters, where it keeps any, are raised past the seats' fences now, so a retry gets newer tokens")
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

// StopTime is how long the service may still act under a seat lock after
// the lock's Lost channel was closed: the moment it takes to cancel the
// charge in progress and to void it at the provider by its id (one round
// trip on one network). A lock service that may hand a lost lock on sooner
// than StopTime after telling its holder lets two holders pay at once; so
// a distributed lock must declare its loss at least StopTime before its
// lease can end on the server (cmd/api sets the lockers' StopMargin to it).
const StopTime = 150 * time.Millisecond

// whileHeld returns a context that ends when ctx does or the lease is
// lost, and stop, which ends the watch and reports whether the lease was
// lost before it. The watching goroutine is gone when stop returns.
func whileHeld(ctx context.Context, lease SeatLease) (context.Context, func() (lost bool)) {
	lostc := lease.Lost()
	if lostc == nil {
		return ctx, func() bool { return false }
	}
	held, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-lostc:
			cancel()
		case <-done:
		}
	}()
	return held, func() bool {
		close(done)
		<-watched
		cancel()
		select {
		case <-lostc:
			return true
		default:
			return false
		}
	}
}
