package postgres

import (
	"context"

	"github.com/seatlock/seatlock/reservation"
)

// MaxConns returns the size of the store's pool, for tests.
func MaxConns(s *Store) int32 { return s.pool.Config().MaxConns }

// WriteBatch writes ws as one batch of s's group commit, whatever else is
// queued, and returns each write's error, for tests of the batch itself.
func WriteBatch(ctx context.Context, s *GroupCommit, ws []reservation.Write) []error {
	return writeBatch(ctx, s.pool, ws)
}

// BookTogether books ws through s's group commit as if by concurrent
// callers that all queued while a batch was on the wire, so that they go
// out in one batch (retries included), and returns each write's error.
func BookTogether(ctx context.Context, s *GroupCommit, ws []reservation.Write) []error {
	errs := make([]error, len(ws))
	for i, p := range s.c.enqueue(ctx, ws...) {
		<-p.done
		errs[i] = p.err
	}
	return errs
}

// MaxInFlight is how many batches a store may have on the wire at once.
const MaxInFlight = maxInFlight

// SecondBatchAt is how many bookings must wait before a second batch goes
// on the wire beside a first.
const SecondBatchAt = secondBatchAt

// Queued returns how many bookings wait for s's next batch, and how many
// batches are on the wire.
func Queued(s *GroupCommit) (queued, inFlight int) {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return len(s.c.queue), s.c.inFlight
}
