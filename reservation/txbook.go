package reservation

import "context"

// Tx is a transaction of the store that holds a booking's seat locks, as
// LockPostgresXact's lease does: the lease hands it to the booking
// (SeatLease.Tx), the booking reads its seats through it and writes
// through it, and the write commits the transaction, which releases the
// locks. Nothing else about the booking changes.
//
// Every other strategy holds its lock beside the store: a lease that can
// run out, or a holder that can pause, between the check and the write,
// which is why those writes need a fencing token. Here the lock belongs to
// the transaction that writes, so the two cannot come apart: if the
// transaction dies (its connection breaks, the server restarts) the lock
// goes with it and nothing is written; if it commits, it held the lock to
// the end. So its lease's Fence returns 0 and Lost nil, and Release rolls
// the transaction back (after Book, it has nothing left to do).
//
// A booking whose lease has a Tx must not use the Store itself: the
// transaction already holds a connection, and one booking must never need
// two.
type Tx interface {
	Reader

	// Book records w in the transaction, with the semantics of
	// Store.Book, and commits it; the commit releases the locks. When it
	// fails, the transaction is rolled back and nothing is written. It
	// returns the errors of Store.Book, and ErrInvalid when w names a seat
	// that was not locked or another screening.
	Book(ctx context.Context, w Write) error

	// CreateHold records w in the transaction, with the semantics of
	// HoldStore.CreateHold, and commits it; the commit releases the locks.
	// When it fails, the transaction is rolled back and nothing is
	// written. It returns the errors of CreateHold, and ErrInvalid when w
	// is not for the locked seats.
	CreateHold(ctx context.Context, w HoldWrite) (Hold, error)
}

// Reader is what a booking reads while it checks its seats: the reading
// half of a Store. A Store is one; so is a Tx.
type Reader interface {
	// Idempotent is Store.Idempotent.
	Idempotent(ctx context.Context, screeningID string, keyHash []byte) (IdempotencyRecord, error)
	// SeatsInUse is Store.SeatsInUse.
	SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error)
	// Booking is Store.Booking.
	Booking(ctx context.Context, id string) (Booking, []byte, error)
}

// bookingStore is where a booking reads and writes while it holds its
// locks: the Store, or the Tx that holds them.
type bookingStore interface {
	Reader
	Book(ctx context.Context, w Write) error
}

// storeOf returns where a booking holding lease reads and writes.
func (s *Service) storeOf(lease SeatLease) bookingStore {
	if tx := lease.Tx(); tx != nil {
		return tx
	}
	return s.store
}
