package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatlock/seatlock/reservation"
)

// translate turns an error of pgx into an error of package reservation, at
// the boundary of the store, naming the operation that failed. It keeps the
// driver's error in the chain where that helps an operator (an unreachable
// server) and leaves it out where the domain error says it all. Errors that
// mean nothing to the domain are wrapped as they are: pgx never puts the
// SQL text into them.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s: %w", op, reservation.ErrNotFound)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("postgres: %s: %w", op, reservation.ErrConflict)
		case "23503": // foreign_key_violation: the screening does not exist
			return fmt.Errorf("postgres: %s: %w", op, reservation.ErrNotFound)
		}
	}
	if unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, reservation.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// commit commits tx. A commit that fails for want of an answer (the
// connection died, ctx ended) may have committed all the same: its error
// wraps reservation.ErrWriteInDoubt. A refusal from the server (a
// serialization failure, a deferred constraint) is translated as usual.
func commit(ctx context.Context, tx pgx.Tx, op string) error {
	err := tx.Commit(ctx)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return translate(op, err)
	}
	return fmt.Errorf("postgres: %s: %w: %w", op, reservation.ErrWriteInDoubt, err)
}

// sentUnanswered reports whether err is the failure of a statement that
// was sent and never answered: the connection died, or ctx ended, while
// the server worked. A statement that commits by itself (one sent outside
// a transaction) may then have committed. An error the server answered,
// or one from before anything was sent, is no such failure.
func sentUnanswered(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) && !pgconn.SafeToRetry(err)
}

// unavailable reports whether err says that the server could not be reached,
// refused the connection, or went away, rather than that it refused the
// statement. A connection that cannot be had is checked first: its error
// wraps the server's own (too many clients, say), which is no refusal of a
// statement.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false // the caller gave up; the server may be fine
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || // connection_exception
			strings.HasPrefix(pgErr.Code, "53") || // insufficient_resources: too many clients, out of memory, disk full
			pgErr.Code == "25P03" || // idle_in_transaction_session_timeout: the server cut the transaction off
			pgErr.Code == "57P01" || // admin_shutdown, also pg_terminate_backend
			pgErr.Code == "57P02" || // crash_shutdown
			pgErr.Code == "57P03" || // cannot_connect_now: starting up or shutting down
			pgErr.Code == "57P05" || // idle_session_timeout
			// deadlock_detected: a booking of a batch chosen as the victim
			// every time it was sent (see GroupCommit); worth a retry later
			pgErr.Code == "40P01"
	}
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		// The connection died under an earlier statement of this
		// transaction, so this one found it closed.
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, pgx.ErrTxClosed) ||
		// No connection came free, or the server did not answer, in time.
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

// migrateError names the failed step of a migration. Unlike translate it
// maps nothing to domain errors but ErrUnavailable: a failed migration is
// read by an operator, who needs the database's own words.
func migrateError(op string, err error) error {
	if unavailable(err) {
		return fmt.Errorf("postgres: %s: %w: %w", op, reservation.ErrUnavailable, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}
