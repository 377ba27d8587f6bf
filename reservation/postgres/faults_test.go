package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// The tests in this file break the database under a store in the ways a
// production database breaks: it refuses connections, a connection dies in
// the middle of a statement or between two statements of a transaction,
// the server cuts an idle transaction off. Each must reach the caller as
// reservation.ErrUnavailable (503 unavailable), never as an unmapped error
// (500), and must leave nothing written.

// admin connects to the database at dbURL as the test's superuser, for
// breaking things under the store.
func admin(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// faultScreening stores a small screening to book on.
func faultScreening(t *testing.T, store reservation.Store, lock reservation.Strategy) reservation.Screening {
	t.Helper()
	sc := reservation.Screening{ID: uuid.NewString(), Movie: "Rope", StartsAt: time.Now(), Rows: 1, SeatsPerRow: 4,
		Lock: lock, Guard: reservation.GuardFence}
	if err := store.CreateScreening(t.Context(), sc); err != nil {
		t.Fatalf("CreateScreening: %v", err)
	}
	return sc
}

// faultWrite is a booking of seat on sc.
func faultWrite(sc reservation.Screening, seat string) reservation.Write {
	return reservation.Write{
		Booking:   reservation.Booking{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: []string{seat}, Customer: "c"},
		TokenHash: []byte("token-hash"),
		Guard:     reservation.GuardFence,
	}
}

// bookXact books w as postgres-xact does: it locks w's seats in a
// transaction of store within wait, runs between (when not nil) while
// they are held, and writes w through that transaction.
func bookXact(ctx context.Context, store *postgres.Store, w reservation.Write, wait time.Duration, between func(ctx context.Context)) error {
	lockCtx, cancel := context.WithTimeout(ctx, wait)
	lease, err := store.XactLocker().LockSeats(lockCtx, w.Booking.ScreeningID, w.Booking.Seats)
	cancel()
	if err != nil {
		return err
	}
	tx := lease.Tx()
	defer lease.Release(ctx)
	if between != nil {
		between(ctx)
	}
	return tx.Book(ctx, w)
}

// assertNothingWritten checks that the booking of w does not exist and its
// seats are free, through a fresh store (the broken one may still be
// recovering).
func assertNothingWritten(t *testing.T, dbURL string, w reservation.Write) {
	t.Helper()
	store := open(t, dbURL)
	if _, _, err := store.Booking(t.Context(), w.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
		t.Errorf("Booking after the failure: %v, want ErrNotFound (nothing written)", err)
	}
	taken, held, err := store.SeatsInUse(t.Context(), w.Booking.ScreeningID, w.Booking.Seats)
	if err != nil {
		t.Fatal(err)
	}
	if len(taken)+len(held) != 0 {
		t.Errorf("seats %v taken and %v held after the failed booking, want none", taken, held)
	}
}

// TestTooManyClientsIsUnavailable connects as a role that may open no
// connection at all (testenv.RefusingDatabaseURL): the server answers every
// connection attempt with SQLSTATE 53300, as a server at max_connections
// does.
func TestTooManyClientsIsUnavailable(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := open(t, dbURL) // migrates
	sc := faultScreening(t, store, reservation.LockRedis)
	refusing := testenv.RefusingDatabaseURL(t, dbURL)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, refusing) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	full := postgres.New(pool)
	defer full.Close()

	w := faultWrite(sc, "A1")
	checks := map[string]error{
		"Ping": full.Ping(ctx),
		"Book": full.Book(ctx, w),
		"xact": bookXact(ctx, full, w, time.Second, nil),
	}
	_, checks["Screening"] = full.Screening(ctx, sc.ID)
	for name, err := range checks {
		if !errors.Is(err, reservation.ErrUnavailable) {
			t.Errorf("%s with the server refusing connections: %v, want ErrUnavailable", name, err)
		}
	}
	assertNothingWritten(t, dbURL, w)
}

// TestTerminatedMidStatementIsUnavailable kills the store's backend while
// its booking statement waits on a table lock held by the test, so the
// connection dies in the middle of the transaction's work.
func TestTerminatedMidStatementIsUnavailable(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := open(t, dbURL)
	sc := faultScreening(t, store, reservation.LockPostgresXact)
	conn := admin(t, dbURL)

	// killMidStatement runs one booking while the test holds the bookings
	// table, kills the backend that waits for it, and returns the
	// booking's error.
	killMidStatement := func(t *testing.T, book func(ctx context.Context) error) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := tx.Exec(ctx, "LOCK TABLE bookings IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- book(ctx) }()
		// Kill the waiting backend, unless the booking ended without
		// waiting (then its own error is the answer).
		waiting, stop := context.WithCancel(ctx)
		go func() {
			err := <-done
			stop()
			done <- err
		}()
		if err := killWaiter(waiting, conn, "Lock"); err != nil && waiting.Err() == nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			t.Fatal("the booking did not end after its backend was terminated")
			return nil
		}
	}

	t.Run("Book", func(t *testing.T) {
		w := faultWrite(sc, "A1")
		err := killMidStatement(t, func(ctx context.Context) error { return store.Book(ctx, w) })
		if !errors.Is(err, reservation.ErrUnavailable) {
			t.Errorf("Book on a terminated connection: %v, want ErrUnavailable", err)
		}
		assertNothingWritten(t, dbURL, w)
	})
	t.Run("xact", func(t *testing.T) {
		w := faultWrite(sc, "A2")
		err := killMidStatement(t, func(ctx context.Context) error {
			return bookXact(ctx, store, w, 10*time.Second, nil)
		})
		if !errors.Is(err, reservation.ErrUnavailable) {
			t.Errorf("xact booking on a terminated connection: %v, want ErrUnavailable", err)
		}
		assertNothingWritten(t, dbURL, w)
	})
	// The store works again afterwards: the pool drops dead connections.
	if err := store.Book(t.Context(), faultWrite(sc, "A3")); err != nil {
		t.Errorf("Book after the fault: %v", err)
	}
}

// TestTransactionCutOffIsUnavailable ends the transaction of a
// postgres-xact booking between its statements: once by
// pg_terminate_backend while the critical section runs, once by the
// server's idle_in_transaction_session_timeout while the critical section
// runs longer than the timeout (a payment that takes too long).
func TestTransactionCutOffIsUnavailable(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := open(t, dbURL)
	sc := faultScreening(t, store, reservation.LockPostgresXact)
	conn := admin(t, dbURL)

	t.Run("terminated", func(t *testing.T) {
		w := faultWrite(sc, "A1")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		err := bookXact(ctx, store, w, 10*time.Second, func(ctx context.Context) {
			// The seats are locked: the transaction is idle, waiting for
			// its booking to write.
			if err := killWaiter(ctx, conn, "Client"); err != nil {
				t.Error(err)
			}
		})
		if !errors.Is(err, reservation.ErrUnavailable) {
			t.Errorf("xact booking after its transaction was terminated: %v, want ErrUnavailable", err)
		}
		assertNothingWritten(t, dbURL, w)
	})

	t.Run("idle timeout", func(t *testing.T) {
		// A store of its own, whose connections carry the timeout.
		short := open(t, withParam(t, dbURL, "idle_in_transaction_session_timeout", "200"))

		w := faultWrite(sc, "A2")
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		err := bookXact(ctx, short, w, 10*time.Second, func(ctx context.Context) {
			select {
			case <-time.After(time.Second): // five times the timeout
			case <-ctx.Done():
			}
		})
		if !errors.Is(err, reservation.ErrUnavailable) {
			t.Errorf("xact booking after the server cut its idle transaction off: %v, want ErrUnavailable", err)
		}
		assertNothingWritten(t, dbURL, w)
	})
}

// killWaiter terminates the other backends of conn's database whose wait
// event type is waitType ("Lock": blocked on a lock; "Client": idle in a
// transaction, waiting for its client), polling until there is one.
func killWaiter(ctx context.Context, conn *pgx.Conn, waitType string) error {
	// ctx ends the polling, not a query: pgx closes a connection whose
	// query is cancelled, and conn is needed after.
	qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		// The test may call this inside a transaction, where
		// pg_stat_activity is a snapshot taken at its first read: drop it.
		if _, err := conn.Exec(qctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			return err
		}
		var killed int
		err := conn.QueryRow(qctx, `
			SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()
			  AND wait_event_type = $1
			  AND (state = 'idle in transaction' OR $1 <> 'Client')`, waitType).Scan(&killed)
		if err != nil {
			return err
		}
		if killed > 0 {
			return nil
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// TestCommitWithoutAnswerIsInDoubt makes COMMIT slow (a deferred trigger
// that sleeps) and lets the caller's context end while it runs: the caller
// cannot know whether the booking committed, and the error must say so
// (reservation.ErrWriteInDoubt, which is also ErrUnavailable), so that the
// service looks the booking up before refunding its charge. A refusal the
// server answers at COMMIT is not in doubt.
func TestCommitWithoutAnswerIsInDoubt(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := open(t, dbURL)
	sc := faultScreening(t, store, reservation.LockRedis)
	slowCommit(t, dbURL, 2*time.Second)

	w := faultWrite(sc, "A1")
	w.Booking.Customer = "slow"
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	err := store.Book(ctx, w)
	if !errors.Is(err, reservation.ErrWriteInDoubt) || !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Book whose COMMIT outlived its context: %v, want ErrWriteInDoubt", err)
	}

	refused := faultWrite(sc, "A2")
	refused.Booking.Customer = "refused"
	err = store.Book(t.Context(), refused)
	if err == nil || errors.Is(err, reservation.ErrWriteInDoubt) {
		t.Errorf("Book refused by the server at COMMIT: %v, want an error that is not in doubt", err)
	}
	assertNothingWritten(t, dbURL, refused)
}
