// Package locking implements reservation.SeatLocker once for every lock
// strategy, on top of the lock libraries: one process-wide mutex (Global),
// one in-process mutex per seat (Keyed, on keyedlock), one distributed lock
// per seat (Distributed, on any distlock backend), and an in-process layer in
// front of a distributed one (Layered).
//
// Each is a few lines, because the strategies differ only in what they lock,
// not in how a booking uses a lock:
//
//	lockers := map[reservation.Strategy]reservation.SeatLocker{
//		reservation.LockGlobal:     locking.Global(),
//		reservation.LockKeyed:      locking.Keyed(seats),
//		reservation.LockRedis:      locking.Distributed(redisLocker),
//		reservation.LockKeyedRedis: locking.Layered(locking.Keyed(seats), locking.Distributed(redisLocker)),
//	}
//
// Why the layered one? Under contention for one hot seat, N goroutines of one
// process would each poll or subscribe to Redis for the same key. With the
// keyed mutex in front, only one goroutine per process and seat talks to
// Redis; the others wait in memory, which costs nothing on the network, and
// no waiter starves (see keyedlock's notes on fairness).
package locking

import (
	"context"
	"errors"
	"fmt"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/reservation"
)

// Global returns a locker that takes one mutex for every seat of every
// screening: correct on one instance, but no two bookings run at once.
func Global() reservation.SeatLocker {
	return &global{sem: make(chan struct{}, 1)}
}

// global is a mutex built on a channel so that waiting can end with the
// caller's context: holding the mutex means having put the one token into
// sem.
type global struct {
	sem chan struct{}
}

func (g *global) LockSeats(ctx context.Context, _ string, _ []string) (reservation.SeatLease, error) {
	select {
	case g.sem <- struct{}{}:
		return LeaseFunc(func() { <-g.sem }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Keyed returns a locker that takes one in-process mutex per seat from m. Two
// bookings of different seats never wait for each other; two instances of
// the service know nothing of each other's mutexes.
func Keyed(m *keyedlock.Mutex) reservation.SeatLocker {
	return keyed{m: m}
}

type keyed struct {
	m *keyedlock.Mutex
}

func (k keyed) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
	}
	unlock, err := k.m.LockAll(ctx, keys...)
	if err != nil {
		return nil, err
	}
	return LeaseFunc(unlock), nil
}

// LeaseFunc is the lease of an in-process lock: the function that unlocks
// it. It cannot be lost and has no fencing token.
type LeaseFunc func()

var _ reservation.SeatLease = LeaseFunc(nil)

// Fence returns 0: an in-process lock has no fencing token.
func (f LeaseFunc) Fence(string) int64 { return 0 }

// RaiseFences does nothing: an in-process lock has no fencing tokens.
func (f LeaseFunc) RaiseFences(context.Context, map[string]int64) error { return nil }

// Lost returns nil: an in-process lock is never lost.
func (f LeaseFunc) Lost() <-chan struct{} { return nil }

// Tx returns nil: the lock is no transaction's.
func (f LeaseFunc) Tx() reservation.Tx { return nil }

// Release calls f.
func (f LeaseFunc) Release(context.Context) error { f(); return nil }

// Distributed returns a locker that takes one distributed lock per seat from
// l, all seats of a booking in one Obtain. The lock keys (reservation.SeatKey)
// put the screening id in a Redis Cluster hash tag, "{screening}:C7", so all
// the seats of one screening live in one slot and can be taken by one script.
func Distributed(l distlock.Locker) reservation.SeatLocker {
	return distributed{l: l}
}

type distributed struct {
	l distlock.Locker
}

func (d distributed) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	keys := make([]string, len(seats))
	for i, seat := range seats {
		keys[i] = reservation.SeatKey(screeningID, seat)
	}
	lock, err := d.l.Obtain(ctx, keys...)
	switch {
	case err == nil:
		return distributedLease{locker: d.l, lock: lock, screeningID: screeningID}, nil
	case errors.Is(err, distlock.ErrNotAcquired) && ctx.Err() != nil:
		return nil, fmt.Errorf("%w: %w", err, ctx.Err())
	default:
		return nil, fmt.Errorf("seat locks: %w: %w", reservation.ErrUnavailable, err)
	}
}

type distributedLease struct {
	locker      distlock.Locker
	lock        distlock.Lock
	screeningID string
}

// fenceRaiser is a lock service whose fencing tokens come from counters
// it keeps, and which can raise them past fences seen written
// (distlock.Redis, redlock.Locker). The others have nothing to raise: their
// tokens do not depend on a clock, or they have none.
type fenceRaiser interface {
	RaiseFences(ctx context.Context, seen map[string]int64) error
}

func (l distributedLease) RaiseFences(ctx context.Context, seen map[string]int64) error {
	r, ok := l.locker.(fenceRaiser)
	if !ok || len(seen) == 0 {
		return nil
	}
	keys := make(map[string]int64, len(seen))
	for seat, fence := range seen {
		keys[reservation.SeatKey(l.screeningID, seat)] = fence
	}
	if err := r.RaiseFences(ctx, keys); err != nil {
		return fmt.Errorf("seat locks: %w: %w", reservation.ErrUnavailable, err)
	}
	return nil
}

func (l distributedLease) Fence(seat string) int64 {
	return l.lock.Token(reservation.SeatKey(l.screeningID, seat))
}

func (l distributedLease) Lost() <-chan struct{} { return l.lock.Lost() }
func (l distributedLease) Tx() reservation.Tx    { return nil }

func (l distributedLease) Release(ctx context.Context) error {
	err := l.lock.Release(ctx)
	if errors.Is(err, distlock.ErrNotHeld) {
		// The lease ran out before the release: the booking either
		// noticed (Lost) and wrote nothing, or wrote behind the fence.
		return fmt.Errorf("seat locks had expired before release: %w", err)
	}
	return err
}

// Layered returns a locker that takes local first and then remote, and
// releases them the other way round. The lease's fencing tokens and loss
// signal are remote's: local is meant to be an in-process lock, which has
// neither.
func Layered(local, remote reservation.SeatLocker) reservation.SeatLocker {
	return layered{local: local, remote: remote}
}

type layered struct {
	local, remote reservation.SeatLocker
}

func (l layered) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	inner, err := l.local.LockSeats(ctx, screeningID, seats)
	if err != nil {
		return nil, err
	}
	outer, err := l.remote.LockSeats(ctx, screeningID, seats)
	if err != nil {
		_ = inner.Release(ctx)
		return nil, err
	}
	return layeredLease{local: inner, remote: outer}, nil
}

type layeredLease struct {
	local, remote reservation.SeatLease
}

func (l layeredLease) Fence(seat string) int64 { return l.remote.Fence(seat) }
func (l layeredLease) Lost() <-chan struct{}   { return l.remote.Lost() }
func (l layeredLease) Tx() reservation.Tx      { return l.remote.Tx() }

func (l layeredLease) RaiseFences(ctx context.Context, seen map[string]int64) error {
	return l.remote.RaiseFences(ctx, seen)
}

func (l layeredLease) Release(ctx context.Context) error {
	err := l.remote.Release(ctx)
	return errors.Join(err, l.local.Release(ctx))
}
