package pglock

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/distlock"
)

// XactLock takes a transaction advisory lock (pg_advisory_xact_lock) on
// every key inside tx, waiting as long as ctx allows. The keys are held
// until tx commits or rolls back, and cannot be released earlier.
//
// The keys are hashed with DefaultNamespace (see Locker.KeyID), so they
// exclude the session locks of a Locker with the default namespace on the
// same keys. They are taken in the order of their ids, the order a Locker
// uses, in one round trip.
//
// Taken in the transaction that writes the booking, this is the strongest
// of seatlock's strategies: the lock and the write commit together or not
// at all, there is no lease that could run out between them, and no
// fencing token is needed. Its cost is a transaction kept open (and a
// connection held) while waiting and while the work inside runs.
//
// When ctx ends first the error is errors.Join(distlock.ErrNotAcquired,
// ctx.Err()); any other error comes from Postgres. Either way tx is
// aborted: roll it back. As in Locker.Obtain, a context that ends the wait
// sends a cancel request, so the server stops waiting at once and the
// connection stays usable.
func XactLock(ctx context.Context, tx pgx.Tx, keys ...string) error {
	ks, err := newKeySet(DefaultNamespace, keys)
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, id := range ks.ids {
		b.Queue("SELECT pg_advisory_xact_lock($1)", id)
	}
	err = waitCancelable(ctx, tx.Conn().PgConn(), func(qctx context.Context) error {
		return tx.SendBatch(qctx, b).Close()
	})
	if err != nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			return errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
		return fmt.Errorf("pglock: transaction lock %q: %w", ks.keys, err)
	}
	return nil
}
