// One batch of group commit on the wire: the statement book_batch
// (migration 0005), its arguments and the reading of its answer.

package postgres

import (
	"context"

	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/seatlock/seatlock/reservation"
	"time"
)

// bookBatch writes a batch of bookings in one statement, its own
// transaction (book_batch, migration 0005), and returns one row per
// booking, in their order: its SQLSTATE (NULL when it was written),
// detail and message.
const bookBatch = `SELECT code, detail, message FROM book_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`

// writeBatch writes ws, validated, in one statement, one transaction and
// one round trip, and returns the error of Book for each. A batch of one
// is the statement book_seats alone.
func writeBatch(ctx context.Context, pool *pgxpool.Pool, ws []reservation.Write) []error {
	errs := make([]error, len(ws))
	conn, err := pool.Acquire(ctx)
	if err != nil {
		fill(errs, translate("book", err))
		return errs
	}
	defer conn.Release()
	if len(ws) == 1 {
		errs[0] = bookAlone(ctx, conn, ws[0])
		return errs
	}

	outcomes := make([]pgconn.PgError, len(ws))
	rows, _ := conn.Query(ctx, bookBatch, batchArgs(ws)...) // its error is rows.Err's
	err = readBatch(rows, outcomes)
	switch {
	case err != nil && sentUnanswered(err):
		// The statement commits by itself: it may have run.
		fill(errs, fmt.Errorf("postgres: book: %w: %w", reservation.ErrWriteInDoubt, err))
	case err != nil:
		// The server refused the statement or its commit: nothing was
		// written.
		fill(errs, guardError("book", err))
	default:
		for i := range outcomes {
			if outcomes[i].Code != "" {
				errs[i] = guardError("book", &outcomes[i])
			}
		}
	}
	return errs
}

// batchArgs are the arguments of book_batch for ws: bookArgs of each
// write, one array per argument, but for the seats and their fences, which
// are flat, each booking's after the one before, with each booking's
// count of seats and each seat's screening.
func batchArgs(ws []reservation.Write) []any {
	n := len(ws)
	var (
		ids, screenings, customers         = make([]string, n), make([]string, n), make([]string, n)
		seatCounts                         = make([]int32, n)
		seatScreenings, seats              []string
		fences                             []int64
		tokenHashes                        = make([][]byte, n)
		createdAts                         = make([]time.Time, n)
		idemKeys, idemRequests, idemSealed = make([][]byte, n), make([][]byte, n), make([][]byte, n)
		idemAts                            = make([]*time.Time, n)
		blind                              = make([]bool, n)
	)
	for i, w := range ws {
		b := w.Booking
		ids[i], screenings[i], customers[i], seatCounts[i] = b.ID, b.ScreeningID, b.Customer, int32(len(b.Seats))
		for _, seat := range b.Seats {
			seatScreenings = append(seatScreenings, b.ScreeningID)
			seats = append(seats, seat)
			fences = append(fences, w.Fences[seat])
		}
		tokenHashes[i], createdAts[i] = w.TokenHash, b.CreatedAt
		if rec := w.Idempotency; rec != nil {
			idemKeys[i], idemRequests[i], idemSealed[i], idemAts[i] = rec.KeyHash, rec.RequestHash, rec.SealedToken, &rec.CreatedAt
		}
		blind[i] = w.Guard == reservation.GuardOff
	}
	return []any{ids, screenings, customers, seatCounts, seatScreenings, seats, fences,
		tokenHashes, createdAts, idemKeys, idemRequests, idemSealed, idemAts, blind}
}

// readBatch reads the answer to bookBatch, storing each booking's outcome
// (Code "" when it was written), and returns the statement's error, its
// commit's included: pgx reads the answer up to the server's "ready",
// which comes after the commit. An answer it cannot read, or one with a
// row too many or too few (neither can happen), fails as unanswered: the
// statement may have committed.
func readBatch(rows pgx.Rows, outcomes []pgconn.PgError) error {
	defer rows.Close()
	i := 0
	for rows.Next() {
		if i == len(outcomes) { // cannot happen: one row per booking
			return fmt.Errorf("postgres: book: more outcomes than bookings")
		}
		var code, detail, message *string
		if err := rows.Scan(&code, &detail, &message); err != nil {
			return err
		}
		if code != nil {
			outcomes[i] = pgconn.PgError{Severity: "ERROR", Code: *code, Detail: *detail, Message: *message}
		}
		i++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if i != len(outcomes) { // cannot happen either
		return fmt.Errorf("postgres: book: %d outcomes for %d bookings", i, len(outcomes))
	}
	return nil
}

func fill(errs []error, err error) {
	for i := range errs {
		errs[i] = err
	}
}
