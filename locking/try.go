package locking

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/reservation"
)

// Every per-seat locker of this package can also try its seats without
// waiting (reservation.SeatTryLocker), which is what a best-available
// request needs: a seat someone else is taking is skipped, never waited
// for. Global cannot: under it every seat waits for every other, which is
// what that strategy shows.
var (
	_ reservation.SeatTryLocker = keyed{}
	_ reservation.SeatTryLocker = distributed{}
	_ reservation.SeatTryLocker = layered{}
)

// errBusy is what a try answers when the locks of seats are held by
// someone else.
func errBusy(seats ...string) error { return &reservation.SeatsBusyError{Seats: seats} }

func (k keyed) TryLockSeats(_ context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	keys := make([]string, 0, len(seats))
	unlock := func() {
		for _, key := range keys {
			k.m.Unlock(key)
		}
	}
	for _, seat := range seats {
		key := reservation.SeatKey(screeningID, seat)
		if !k.m.TryLock(key) {
			unlock()
			return nil, errBusy(seat)
		}
		keys = append(keys, key)
	}
	return LeaseFunc(unlock), nil
}

// tryObtainer is a distlock backend that can take keys without waiting.
// Every backend of this repository is one.
type tryObtainer interface {
	TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error)
}

func (d distributed) TryLockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	t, ok := d.l.(tryObtainer)
	if !ok {
		return nil, fmt.Errorf("seat locks: %T cannot try a lock without waiting: %w", d.l, reservation.ErrUnavailable)
	}
	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
	}
	lock, err := t.TryObtain(ctx, keys...)
	switch {
	case err == nil:
		return distributedLease{locker: d.l, lock: lock, screeningID: screeningID}, nil
	case errors.Is(err, distlock.ErrNotAcquired):
		return nil, errBusy(d.busy(ctx, t, screeningID, seats)...)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("seat locks: %w", ctx.Err())
	default:
		return nil, fmt.Errorf("seat locks: %w: %w", reservation.ErrUnavailable, err)
	}
}

// busy finds which of the seats are held, when a try of them all failed:
// it tries each alone and gives back at once what it got. A seat that came
// free meanwhile is not reported; the caller may try it again.
func (d distributed) busy(ctx context.Context, t tryObtainer, screeningID string, seats []string) []string {
	if len(seats) == 1 {
		return seats
	}
	var held []string
	for _, seat := range seats {
		lock, err := t.TryObtain(ctx, reservation.SeatKey(screeningID, seat))
		if err != nil {
			held = append(held, seat)
			continue
		}
		_ = lock.Release(ctx)
	}
	return held
}

func (l layered) TryLockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	local, ok1 := l.local.(reservation.SeatTryLocker)
	remote, ok2 := l.remote.(reservation.SeatTryLocker)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("seat locks: a layer cannot try a lock without waiting: %w", reservation.ErrUnavailable)
	}
	inner, err := local.TryLockSeats(ctx, screeningID, seats)
	if err != nil {
		return nil, err
	}
	outer, err := remote.TryLockSeats(ctx, screeningID, seats)
	if err != nil {
		_ = inner.Release(ctx)
		return nil, err
	}
	return layeredLease{local: inner, remote: outer}, nil
}

var _ reservation.SeatTryLocker = instrumented{}

func (i instrumented) TryLockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	t, ok := i.l.(reservation.SeatTryLocker)
	if !ok {
		return nil, fmt.Errorf("seat locks: %s cannot try a lock without waiting: %w", i.layer, reservation.ErrUnavailable)
	}
	start := time.Now()
	lease, err := t.TryLockSeats(ctx, screeningID, seats)
	had := time.Now()
	if errors.Is(err, reservation.ErrSeatBusy) {
		// A try that found the seats taken did not wait: it is no lock
		// wait, and no error of the backend.
		return nil, err
	}
	i.obs.Waited(i.layer, had.Sub(start), err)
	if err != nil {
		return nil, err
	}
	return &instrumentedLease{SeatLease: lease, i: i, screeningID: screeningID, had: had}, nil
}
