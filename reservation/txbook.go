package reservation

import (
	"context"
	"time"
)

// TxBooker is a Store that can run a booking's whole critical section inside
// one transaction that holds the seats' locks until it commits. The Service
// offers LockPostgresXact only over a Store that implements it.
//
// Every other strategy holds its lock beside the store: a lease that can run
// out, or a holder that can pause, between the check and the write, which
// is why those writes need a fencing token. Here the lock belongs to the
// transaction that writes, so the two cannot come apart: if the transaction
// dies (its connection breaks, the server restarts) the lock goes with it
// and nothing is written; if it commits, it held the lock to the end.
type TxBooker interface {
	// BookLocked opens a transaction, takes the locks of the given seats
	// of the screening in it (the seats arrive sorted and distinct), and
	// runs critical with a Reader that reads through that transaction.
	// The Write that critical returns is recorded in the same transaction,
	// with the semantics of Store.Book, and the transaction commits: the
	// locks are released by that commit. A nil Write means there is
	// nothing to write: the transaction rolls back and BookLocked returns
	// nil. When critical or the write fails, the transaction rolls back
	// and nothing is written.
	//
	// Taking the locks (and the connection they need) may last at most
	// lockWait; after that BookLocked returns an error wrapping
	// ErrSeatBusy. A lockWait of 0 waits for no lock: when one is held
	// it returns a *SeatsBusyError at once (best available skips those
	// seats). It returns the error of critical as it is, the errors
	// of Store.Book, ErrInvalid when the Write names a seat that was not
	// locked, ErrUnavailable when the backend cannot be reached, or an
	// error wrapping ctx.Err() when ctx ended.
	BookLocked(ctx context.Context, screeningID string, seats []string, lockWait time.Duration, critical CriticalSection) error
}

// CriticalSection is the part of a booking that runs while a TxBooker holds
// the seats' locks: it reads through r, which sees the transaction that
// holds them, and returns the Write to record in that transaction (nil for
// none). It must not use the Store itself: the transaction already holds a
// connection, and one booking must never need two.
type CriticalSection func(ctx context.Context, r Reader) (*Write, error)

// Reader is what a booking reads while it checks its seats: the reading
// half of a Store. A Store is one; so is the transaction of a TxBooker.
type Reader interface {
	// TakenSeats is Store.TakenSeats.
	TakenSeats(ctx context.Context, screeningID string, seats []string) ([]string, error)
	// Idempotent is Store.Idempotent.
	Idempotent(ctx context.Context, screeningID string, keyHash []byte) (IdempotencyRecord, error)
	// SeatsInUse is Store.SeatsInUse.
	SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error)
	// Booking is Store.Booking.
	Booking(ctx context.Context, id string) (Booking, []byte, error)
}
