package locking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// pgService returns a service whose postgres strategy takes its session
// locks through a pool on lockURL and writes to a store on storeURL, as
// an API instance does (there both are one URL).
func pgService(t *testing.T, storeURL, lockURL string) *reservation.Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	store, err := postgres.Open(ctx, storeURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	pool, err := pgxpool.New(ctx, lockURL) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// A watchdog that asks often notices a dead session within the test's
	// payment.
	locker := pglock.New(pool, pglock.Options{TTL: 10 * time.Second, RenewEvery: 50 * time.Millisecond})
	return reservation.NewService(store, reservation.Options{
		LockWait: 5 * time.Second,
		Lockers:  map[reservation.Strategy]reservation.SeatLocker{reservation.LockPostgres: locking.Distributed(locker)},
	})
}

func pgScreening(t *testing.T, svc *reservation.Service, delay time.Duration) reservation.Screening {
	t.Helper()
	sc, err := svc.CreateScreening(t.Context(), reservation.NewScreening{
		Movie: "Rope", Rows: 1, SeatsPerRow: 4, Lock: reservation.LockPostgres, Guard: reservation.GuardFence, PaymentDelay: &delay,
	})
	if err != nil {
		t.Fatalf("CreateScreening: %v", err)
	}
	return sc
}

// TestPostgresLockRefusedIsUnavailable books on the postgres strategy while
// the lock's server refuses every connection with too many clients
// (SQLSTATE 53300, through a role that may open none): 503, nothing booked.
func TestPostgresLockRefusedIsUnavailable(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	svc := pgService(t, dbURL, testenv.RefusingDatabaseURL(t, dbURL))
	sc := pgScreening(t, svc, 0)
	_, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "c"})
	if !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Book with the lock server refusing connections: %v, want ErrUnavailable", err)
	}
	assertNoSeatBooked(t, svc, sc.ID)
}

// TestPostgresLockSessionKilledWritesNothing kills the session that holds a
// booking's seat locks during its payment. The lock is gone, so the
// booking must end with lock_lost (409) and write nothing: the contract's
// answer for a lost lock, which tells the client that nothing was booked.
// Anything else (an unmapped error, a confirmed booking) fails.
func TestPostgresLockSessionKilledWritesNothing(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	svc := pgService(t, dbURL, dbURL)
	sc := pgScreening(t, svc, 3*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	done := make(chan error, 1)
	go func() {
		_, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "c"})
		done <- err
	}()
	// Kill whichever session holds an advisory lock in this database:
	// only the booking's lock does.
	wait.For(t, 10*time.Second, "a session holds the seat's lock, and is killed", func() bool {
		killed := 0
		err := conn.QueryRow(ctx, `
			SELECT count(pg_terminate_backend(pid)) FROM (
				SELECT DISTINCT pid FROM pg_locks
				WHERE locktype = 'advisory' AND granted
				  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS holders`).Scan(&killed)
		if err != nil {
			t.Fatal(err)
		}
		return killed > 0
	})
	// The kill lands during the payment, as a rule: lock_lost. It may land
	// while Obtain still reads the seat's fence on that session: then the
	// lock was never had, and the answer is unavailable. Both are answers
	// that say nothing was booked.
	err = wait.Recv(t, done, 30*time.Second, "the answer of the booking whose lock session was killed")
	if !errors.Is(err, reservation.ErrLockLost) && !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Book whose lock session was killed: %v, want ErrLockLost (or ErrUnavailable)", err)
	}
	assertNoSeatBooked(t, svc, sc.ID)
}

func assertNoSeatBooked(t *testing.T, svc *reservation.Service, screeningID string) {
	t.Helper()
	_, seats, err := svc.Seats(t.Context(), screeningID)
	if err != nil {
		t.Fatal(err)
	}
	for _, seat := range seats {
		if seat.BookingID != "" {
			t.Errorf("seat %s booked by %s after the failed booking, want free", seat.ID, seat.BookingID)
		}
	}
}
