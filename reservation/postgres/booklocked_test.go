package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// xactService returns a Service in demo mode over its own store on url, as
// one API instance would be; several on one url are several instances.
// lockWait is the context of a lock wait of d, ended with the test.
func lockWait(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func xactService(t *testing.T, url string, lockWait time.Duration) (*reservation.Service, *postgres.Store) {
	t.Helper()
	store := open(t, url)
	svc := reservation.NewService(store, reservation.Options{LockWait: lockWait, Demo: true,
		Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockPostgresXact: store.XactLocker()}})
	if !slices.Contains(svc.Strategies(), string(reservation.LockPostgresXact)) {
		t.Fatalf("Strategies() = %v, want postgres-xact offered over the Postgres store", svc.Strategies())
	}
	return svc, store
}

func xactScreening(t *testing.T, svc *reservation.Service, guard reservation.Guard, delay time.Duration) reservation.Screening {
	t.Helper()
	sc, err := svc.CreateScreening(t.Context(), reservation.NewScreening{
		Movie: "Rope", Rows: 2, SeatsPerRow: 8,
		Lock: reservation.LockPostgresXact, Guard: guard, PaymentDelay: &delay,
	})
	if err != nil {
		t.Fatalf("CreateScreening: %v", err)
	}
	return sc
}

// TestXactOneSeatOneWinnerAcrossInstances races bookings of one seat from
// two services over two stores (two API instances on one database). The
// transaction lock lets one in at a time, and each later one finds the seat
// taken. With guard=off the write is blind, so only the lock stands between
// the bookings and a double booking: this subtest fails (several bookings
// confirmed) when XactLocker does not take the lock.
func TestXactOneSeatOneWinnerAcrossInstances(t *testing.T) {
	url := testenv.NewDatabase(t)
	a, store := xactService(t, url, 30*time.Second)
	b, _ := xactService(t, url, 30*time.Second)
	for _, guard := range []reservation.Guard{reservation.GuardFence, reservation.GuardOff} {
		t.Run("guard="+string(guard), func(t *testing.T) {
			sc := xactScreening(t, a, guard, 20*time.Millisecond)
			const bookings = 12
			var confirmed []string
			var mu sync.Mutex // protects confirmed
			var wg sync.WaitGroup
			for i := range bookings {
				svc := a
				if i%2 == 1 {
					svc = b
				}
				wg.Go(func() {
					c, err := svc.Book(t.Context(), reservation.BookRequest{
						ScreeningID: sc.ID, Seats: []string{"B3"}, Customer: fmt.Sprintf("c%d", i)})
					switch {
					case err == nil:
						mu.Lock()
						confirmed = append(confirmed, c.Booking.ID)
						mu.Unlock()
					case !errors.Is(err, reservation.ErrSeatTaken):
						t.Errorf("booking %d: %v, want a booking or ErrSeatTaken", i, err)
					}
				})
			}
			wg.Wait()
			if len(confirmed) != 1 {
				t.Fatalf("%d bookings confirmed for one seat, want exactly 1", len(confirmed))
			}
			booked, err := store.BookedSeats(t.Context(), sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if booked["B3"] != confirmed[0] {
				t.Errorf("B3 is held by %q, want the confirmed booking %s", booked["B3"], confirmed[0])
			}
		})
	}
}

// TestXactOverlappingSeatsInOppositeOrders books overlapping pairs of seats
// directly through XactLocker, each pair in both orders, from two stores.
// The locks are taken in one order whatever the order asked, so nobody
// deadlocks (Postgres would abort one with 40P01), and a booking gets all
// of its seats or none.
func TestXactOverlappingSeatsInOppositeOrders(t *testing.T) {
	url := testenv.NewDatabase(t)
	stores := []*postgres.Store{open(t, url), open(t, url)}
	ctx := t.Context()
	sc := reservation.Screening{ID: "overlap", Movie: "M", StartsAt: time.Now(), Rows: 1, SeatsPerRow: 6,
		Lock: reservation.LockPostgresXact, Guard: reservation.GuardFence}
	if err := stores[0].CreateScreening(ctx, sc); err != nil {
		t.Fatal(err)
	}
	pairs := [][]string{{"A1", "A2"}, {"A2", "A3"}, {"A3", "A4"}, {"A4", "A1"}, {"A2", "A4"}, {"A3", "A1"}}
	var confirmed [][]string
	var mu sync.Mutex // protects confirmed
	var wg sync.WaitGroup
	for i := range 2 * len(pairs) {
		seats := slices.Clone(pairs[i/2])
		if i%2 == 1 {
			slices.Reverse(seats)
		}
		store := stores[i%2]
		wg.Go(func() {
			booked, err := bookPair(ctx, store, sc.ID, seats)
			if err != nil {
				t.Errorf("booking %v: %v", seats, err)
				return
			}
			if !booked {
				return
			}
			mu.Lock()
			confirmed = append(confirmed, seats)
			mu.Unlock()
		})
	}
	wg.Wait()

	booked, err := stores[0].BookedSeats(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Every booking the database holds has all of its seats.
	seatsOf := map[string][]string{}
	for seat, id := range booked {
		seatsOf[id] = append(seatsOf[id], seat)
	}
	for id, seats := range seatsOf {
		b, _, err := stores[0].Booking(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(seats) != len(b.Seats) {
			t.Errorf("booking %s holds %v of its seats %v: a partial booking", id, seats, b.Seats)
		}
	}
	if len(seatsOf) == 0 || len(seatsOf) > 2 {
		t.Errorf("%d bookings hold seats, want 1 or 2 (4 seats, pairs)", len(seatsOf))
	}
}

// bookPair books seats, in the order given, through a transaction of
// store that locks them: it reports false when one was taken.
func bookPair(ctx context.Context, store *postgres.Store, screeningID string, seats []string) (bool, error) {
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	lease, err := store.XactLocker().LockSeats(wait, screeningID, seats)
	if err != nil {
		return false, err
	}
	tx := lease.Tx()
	defer lease.Release(ctx)
	taken, held, err := tx.SeatsInUse(ctx, screeningID, seats)
	if err != nil || len(taken)+len(held) > 0 {
		return false, err
	}
	time.Sleep(5 * time.Millisecond) // hold the first lock while others queue
	return true, tx.Book(ctx, reservation.Write{
		Booking: reservation.Booking{ID: uuid.NewString(), ScreeningID: screeningID, Seats: seats,
			Customer: "c", Status: reservation.BookingConfirmed, CreatedAt: time.Now()},
		TokenHash: []byte("t"), Guard: reservation.GuardFence,
	})
}

// TestXactLockWaitIsSeatBusy holds a seat's lock in one transaction (a
// critical section that waits) and books it from another instance with a
// short lock wait: the answer is ErrSeatBusy, for the store and the
// service alike. With a pool of one connection, a booking of another seat
// waits for a connection instead, and when none comes free within the wait
// it is ErrUnavailable: an exhausted pool, not a busy seat.
func TestXactLockWaitIsSeatBusy(t *testing.T) {
	url := testenv.NewDatabase(t)
	ctx := t.Context()
	svc, _ := xactService(t, url, 100*time.Millisecond) // migrates
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	holder := postgres.New(pool)
	t.Cleanup(holder.Close)
	sc := xactScreening(t, svc, reservation.GuardFence, 0)

	held, err := holder.XactLocker().LockSeats(lockWait(t, time.Second), sc.ID, []string{"A1", "A2"})
	if err != nil {
		t.Fatalf("holder: %v", err)
	}

	_, err = svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A2", "A3"}, Customer: "bob"})
	if !errors.Is(err, reservation.ErrSeatBusy) {
		t.Errorf("Book of a locked seat: %v, want ErrSeatBusy", err)
	}
	other, err := holder.XactLocker().LockSeats(lockWait(t, 50*time.Millisecond), sc.ID, []string{"B1"})
	if !errors.Is(err, reservation.ErrUnavailable) || errors.Is(err, reservation.ErrSeatBusy) {
		t.Errorf("LockSeats with the pool's only connection in use: %v, want ErrUnavailable", err)
	}
	if other != nil {
		t.Error("LockSeats without a connection returned a lease")
	}

	if err := held.Release(ctx); err != nil {
		t.Fatalf("holder: %v", err)
	}
	// Released by the holder's rollback: the seat can be had at once.
	if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A2", "A3"}, Customer: "bob"}); err != nil {
		t.Errorf("Book after the holder ended: %v", err)
	}
}

// TestXactCancelDuringPaymentWritesNothing cancels a booking while it waits
// for its payment, inside its transaction: nothing is written, the
// transaction is rolled back (no session is left idle in it) and the locks
// are gone, so the seat can be booked at once.
func TestXactCancelDuringPaymentWritesNothing(t *testing.T) {
	url := testenv.NewDatabase(t)
	svc, store := xactService(t, url, 200*time.Millisecond)
	sc := xactScreening(t, svc, reservation.GuardFence, 30*time.Second)
	probe, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(probe.Close)
	count := func(query string) int {
		t.Helper()
		var n int
		if err := probe.QueryRow(t.Context(), query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const advisoryLocks = `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
		WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()`
	const openTransactions = `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1", "A2"}, Customer: "alice"})
		done <- err
	}()
	// Wait until the booking holds its two locks and its transaction is
	// idle after the seat check (its last query): it is paying. Idle
	// alone is not enough: between the lock and the check the transaction
	// is idle for a moment, and a cancel that lands during the check's
	// query instead closes the connection, which the server notices (and
	// lets go of the locks) only a moment later; on a busy machine CI
	// caught it there.
	const paying = openTransactions + ` AND query LIKE '%WITH ORDINALITY AS asked%'`
	for deadline := time.Now().Add(10 * time.Second); count(advisoryLocks) < 2 || count(paying) < 1; {
		if time.Now().After(deadline) {
			t.Fatal("the booking never held its locks")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := count(openTransactions); n != 1 {
		t.Errorf("%d transactions open while paying, want 1", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Book: %v, want context.Canceled", err)
	}

	if n := count(advisoryLocks); n != 0 {
		t.Errorf("%d advisory locks held after the cancel, want 0", n)
	}
	if n := count(openTransactions); n != 0 {
		t.Errorf("%d transactions left open after the cancel, want 0", n)
	}
	if n := count(`SELECT count(*) FROM bookings`); n != 0 {
		t.Errorf("%d bookings written, want 0", n)
	}
	taken, held, err := store.SeatsInUse(t.Context(), sc.ID, []string{"A1", "A2"})
	if err != nil || len(taken)+len(held) > 0 {
		t.Errorf("SeatsInUse = %v, %v, %v; want none", taken, held, err)
	}
}

// TestXactIdempotency sends one request with an Idempotency-Key from two
// instances at once: one booking is made, both get its answer, and the
// record is written in the booking's transaction.
func TestXactIdempotency(t *testing.T) {
	url := testenv.NewDatabase(t)
	a, store := xactService(t, url, 30*time.Second)
	b, _ := xactService(t, url, 30*time.Second)
	sc := xactScreening(t, a, reservation.GuardFence, 20*time.Millisecond)
	req := reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A5", "A6"}, Customer: "carol", IdempotencyKey: "k-1"}

	var answers [4]reservation.Confirmation
	var wg sync.WaitGroup
	for i := range answers {
		svc := []*reservation.Service{a, b}[i%2]
		wg.Go(func() {
			c, err := svc.Book(t.Context(), req)
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			answers[i] = c
		})
	}
	wg.Wait()
	for i, c := range answers[1:] {
		if c.Booking.ID != answers[0].Booking.ID || c.Token != answers[0].Token {
			t.Errorf("answer %d is booking %s, want the first answer's %s with its token", i+1, c.Booking.ID, answers[0].Booking.ID)
		}
	}
	booked, err := store.BookedSeats(t.Context(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(booked) != 2 {
		t.Errorf("booked seats %v, want A5 and A6 only", booked)
	}

	other := req
	other.Seats = []string{"B1"}
	if _, err := b.Book(t.Context(), other); !errors.Is(err, reservation.ErrIdempotencyMismatch) {
		t.Errorf("same key, other seats: %v, want ErrIdempotencyMismatch", err)
	}
}

// TestXactOneConnectionPerBooking books under postgres-xact over a store
// whose pool has one connection: the booking reads and writes through the
// transaction that holds its locks, so it never needs a second one. A
// booking that read or wrote through the store instead would wait for a
// connection its own transaction holds, until the test's deadline.
func TestXactOneConnectionPerBooking(t *testing.T) {
	url := testenv.NewDatabase(t)
	xactService(t, url, time.Second) // migrates
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.New(pool)
	t.Cleanup(store.Close)
	svc := reservation.NewService(store, reservation.Options{LockWait: time.Second,
		Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockPostgresXact: store.XactLocker()}})
	sc := xactScreening(t, svc, reservation.GuardFence, 0)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req := reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1", "A2"}, Customer: "dan", IdempotencyKey: "one"}
	c, err := svc.Book(ctx, req)
	if err != nil {
		t.Fatalf("Book with a pool of one connection: %v", err)
	}
	again, err := svc.Book(ctx, req)
	if err != nil || again.Booking.ID != c.Booking.ID {
		t.Fatalf("the same request again: %v, %v; want booking %s", again.Booking.ID, err, c.Booking.ID)
	}
	req.IdempotencyKey = ""
	if _, err := svc.Book(ctx, req); !errors.Is(err, reservation.ErrSeatTaken) {
		t.Fatalf("a second booking of the seats: %v, want ErrSeatTaken", err)
	}
}

// TestXactBookingsLeaveConnections: bookings in a transaction hold their
// connection for the whole critical section, payment included, so they
// may take only some of the pool. With two connections, one booking in
// its critical section is as many as may run: a second one, of a free
// seat, answers ErrUnavailable once its lock wait is over (not
// ErrSeatBusy: no seat was busy), and meanwhile the store's other work
// still gets the connection kept for it at once.
func TestXactBookingsLeaveConnections(t *testing.T) {
	url := testenv.NewDatabase(t)
	ctx := t.Context()
	svc, _ := xactService(t, url, time.Second) // migrates
	sc := xactScreening(t, svc, reservation.GuardFence, 0)
	store, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)

	held, err := store.XactLocker().LockSeats(lockWait(t, time.Second), sc.ID, []string{"A1"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := store.XactLocker().LockSeats(lockWait(t, 100*time.Millisecond), sc.ID, []string{"B1"})
	if !errors.Is(err, reservation.ErrUnavailable) || errors.Is(err, reservation.ErrSeatBusy) {
		t.Errorf("a second booking in a transaction: %v, want ErrUnavailable", err)
	}
	if other != nil {
		t.Error("a second booking in a transaction ran with the pool's last connection")
		_ = other.Release(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, _, err := store.SeatsInUse(rctx, sc.ID, []string{"B1"}); err != nil {
		t.Errorf("a read while a booking holds its transaction: %v", err)
	}

	if err := held.Release(ctx); err != nil {
		t.Fatalf("holder: %v", err)
	}
	again, err := store.XactLocker().LockSeats(lockWait(t, time.Second), sc.ID, []string{"B1"})
	if err != nil {
		t.Fatalf("a booking in a transaction once the first ended: %v", err)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
