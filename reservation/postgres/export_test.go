package postgres

import (
	"context"

	"github.com/seatlock/seatlock/reservation"
)

// MaxConns returns the size of the store's pool, for tests.
func MaxConns(s *Store) int32 { return s.pool.Config().MaxConns }

// WriteBatch writes ws as one batch of s's group commit, whatever else is
// queued, and returns each write's error, for tests of the batch itself.
func WriteBatch(ctx context.Context, s *Store, ws []reservation.Write) []error {
	return writeBatch(ctx, s.pool, ws)
}
