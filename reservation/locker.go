package reservation

import "context"

// SeatLocker takes the locks that protect seats while a booking checks and
// writes them. Each lock Strategy has one; they live outside this package
// (see package locking), so that the domain knows no mutex or Redis.
type SeatLocker interface {
	// LockSeats takes the locks of the given seats of a screening, all or
	// nothing, waiting as long as ctx allows. The seats arrive sorted and
	// distinct. It returns an error wrapping ctx.Err() when the context
	// ended the wait, or ErrUnavailable when the lock backend cannot be
	// reached.
	LockSeats(ctx context.Context, screeningID string, seats []string) (SeatLease, error)
}

// SeatLease is a held set of seat locks.
type SeatLease interface {
	// Fence returns the fencing token of a seat's lock, or 0 when the
	// strategy has none.
	Fence(seat string) int64

	// Lost is closed when the lock was lost while held; the booking must not
	// write after that. It is nil for locks that cannot be lost.
	Lost() <-chan struct{}

	// Tx returns the store transaction that holds the locks, when they
	// belong to one (LockPostgresXact's do): the booking then reads and
	// writes through it instead of the Store. It is nil for every lock
	// held beside the store. A lease that wraps another (a measuring
	// layer) returns the inner lease's Tx, so wrapping never hides it.
	Tx() Tx

	// RaiseFences makes the next fencing token of each seat's lock newer
	// than seen[seat], the newest fence the seat was written with, after
	// the guarded write refused this lease's tokens as stale. A lock
	// service that lost its fence counters issues tokens from its clock,
	// and a clock that stepped back issues tokens the seats refuse until
	// it catches up: raising the counters ends that at once. Raising only
	// ever makes later tokens newer, so it is safe whoever wrote the
	// seats. It does nothing for a strategy without fencing tokens, and
	// returns ErrUnavailable when the lock service cannot be reached.
	RaiseFences(ctx context.Context, seen map[string]int64) error

	// Release gives the locks up.
	Release(ctx context.Context) error
}
