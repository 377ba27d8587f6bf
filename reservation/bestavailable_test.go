package reservation_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/postgres"
)

func demoService(t *testing.T) *reservation.Service {
	t.Helper()
	return reservation.NewService(memory.New(), reservation.Options{Demo: true, DefaultLock: reservation.LockNone})
}

func screeningOf(t *testing.T, svc *reservation.Service, rows, perRow int, lock reservation.Strategy) reservation.Screening {
	t.Helper()
	sc, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "Best", Rows: rows, SeatsPerRow: perRow, Lock: lock})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestBestAvailableOrder books single seats until sold out and checks the
// documented order: rows from the middle (a tie to the row further back),
// seats from the middle of the row (a tie to the lower number).
func TestBestAvailableOrder(t *testing.T) {
	for _, tc := range []struct {
		rows, perRow int
		want         []string
	}{
		// The middle seat of each row first: any other single seat of a
		// row with its middle taken leaves its neighbour alone, so the
		// middle of the next row strands none. Then no choice leaves none,
		// and each stranded seat is taken next, which strands none.
		{3, 5, []string{"B3", "C3", "A3", "B2", "B1", "B4", "B5", "C2", "C1", "C4", "C5", "A2", "A1", "A4", "A5"}},
		{4, 2, []string{"C1", "C2", "B1", "B2", "D1", "D2", "A1", "A2"}},
	} {
		svc := demoService(t)
		sc := screeningOf(t, svc, tc.rows, tc.perRow, reservation.LockNone)
		var got []string
		for range tc.want {
			c, err := svc.Book(t.Context(), reservation.BookRequest{ScreeningID: sc.ID, Count: 1, Customer: "c"})
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			got = append(got, c.Booking.Seats...)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%dx%d: booked in the order %v, want %v", tc.rows, tc.perRow, got, tc.want)
		}
		_, err := svc.Book(t.Context(), reservation.BookRequest{ScreeningID: sc.ID, Count: 1, Customer: "c"})
		if !errors.Is(err, reservation.ErrSoldOut) {
			t.Errorf("a full screening answered %v, want ErrSoldOut", err)
		}
	}
}

func TestBestAvailableAdjacent(t *testing.T) {
	ctx := t.Context()
	svc := demoService(t)
	sc := screeningOf(t, svc, 3, 5, reservation.LockNone)
	book := func(count int, adjacent bool) ([]string, error) {
		c, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Count: count, Adjacent: adjacent, Customer: "c"})
		return c.Booking.Seats, err
	}
	// Blocks of 2 in a row of 5, by their centre's distance from the
	// middle: 2-3 and 3-4 tie (2-3 has the lower number), then 1-2, 4-5.
	// 2-3 would leave 1 alone and 3-4 would leave 5 alone: 1-2 strands
	// none. Then every block left in row B strands a seat, and C1-C2 is
	// the best that does not.
	for _, want := range [][]string{{"B1", "B2"}, {"C1", "C2"}} {
		if got, err := book(2, true); err != nil || !slices.Equal(got, want) {
			t.Fatalf("2 adjacent = %v, %v; want %v", got, err, want)
		}
	}
	if got, err := book(4, true); err != nil || !slices.Equal(got, []string{"A1", "A2", "A3", "A4"}) {
		t.Fatalf("4 adjacent = %v, %v; want A1-A4, the only row with 4 free side by side (A5 is left alone: no choice leaves none)", got, err)
	}
	// Left: B3-B5, C3-C5, A5. B3 and C3 leave pairs.
	if got, err := book(2, false); err != nil || !slices.Equal(got, []string{"B3", "C3"}) {
		t.Fatalf("2 anywhere = %v, %v; want B3 C3", got, err)
	}
	// Left: B4, B5, C4, C5, A5. No 3 side by side, but 3 singles.
	if _, err := book(3, true); !errors.Is(err, reservation.ErrSoldOut) {
		t.Fatalf("3 adjacent: %v, want ErrSoldOut", err)
	}
	if got, err := book(3, false); err != nil || !slices.Equal(got, []string{"A5", "B4", "B5"}) {
		t.Fatalf("3 anywhere = %v, %v; want A5 B4 B5 (B4, B5, then C4 would leave C5 alone)", got, err)
	}
	for _, bad := range []reservation.BookRequest{
		{Count: 0, Adjacent: true, Customer: "c"},
		{Count: 11, Customer: "c"},
		{Count: -1, Customer: "c"},
		{Count: 1, Seats: []string{"A1"}, Customer: "c"},
		{Seats: []string{"A1"}, Adjacent: true, Customer: "c"},
		{Count: 1},
	} {
		bad.ScreeningID = sc.ID
		if _, err := svc.Book(ctx, bad); !errors.Is(err, reservation.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}

// TestBestAvailableSkipsLockedSeats holds the lock of the best seat, as a
// booking in its critical section would, and asks for the best seat with
// a lock wait far longer than the test: the request must take the next
// best seat at once rather than wait. One case per way of trying a lock:
// an in-process mutex, Redis, and a Postgres transaction lock.
func TestBestAvailableSkipsLockedSeats(t *testing.T) {
	type setup struct {
		svc  *reservation.Service
		sc   reservation.Screening
		hold func(seat string) (release func())
	}
	const lockWait = 10 * time.Minute
	cases := map[string]func(t *testing.T) setup{
		"keyed": func(t *testing.T) setup {
			m := &keyedlock.Mutex{}
			svc := reservation.NewService(memory.New(), reservation.Options{LockWait: lockWait,
				Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockKeyed: locking.Keyed(m)}})
			sc := screeningOf(t, svc, 1, 5, reservation.LockKeyed)
			return setup{svc, sc, func(seat string) func() {
				if !m.TryLock(reservation.SeatKey(sc.ID, seat)) {
					t.Fatal("seat lock taken")
				}
				return func() { m.Unlock(reservation.SeatKey(sc.ID, seat)) }
			}}
		},
		"keyed+redis": func(t *testing.T) setup {
			locks := distlock.NewRedis(testenv.RedisClient(t, testenv.RedisURL(t)), distlock.RedisOptions{})
			t.Cleanup(func() { locks.Close() })
			svc := reservation.NewService(memory.New(), reservation.Options{LockWait: lockWait,
				Lockers: map[reservation.Strategy]reservation.SeatLocker{
					reservation.LockKeyedRedis: locking.Layered(locking.Keyed(&keyedlock.Mutex{}), locking.Distributed(locks)),
				}})
			sc := screeningOf(t, svc, 1, 5, reservation.LockKeyedRedis)
			return setup{svc, sc, func(seat string) func() {
				// Another instance's lock: only Redis knows of it.
				l, err := locks.Obtain(t.Context(), reservation.SeatKey(sc.ID, seat))
				if err != nil {
					t.Fatal(err)
				}
				return func() { _ = l.Release(context.Background()) }
			}}
		},
		"postgres-xact": func(t *testing.T) setup {
			store, err := postgres.Open(t.Context(), testenv.NewDatabase(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(store.Close)
			svc := reservation.NewService(store, reservation.Options{LockWait: lockWait,
				Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockPostgresXact: store.XactLocker()}})
			sc := screeningOf(t, svc, 1, 5, reservation.LockPostgresXact)
			return setup{svc, sc, func(seat string) func() {
				// A booking of the seat in its critical section, holding
				// the transaction's lock until it is released.
				l, err := store.XactLocker().LockSeats(t.Context(), sc.ID, []string{seat})
				if err != nil {
					t.Fatal(err)
				}
				return func() { _ = l.Release(context.Background()) }
			}}
		},
	}
	for name, newSetup := range cases {
		t.Run(name, func(t *testing.T) {
			s := newSetup(t)
			release := s.hold("A3") // the best seat of a row of 5
			defer release()
			for _, tc := range []struct {
				count    int
				adjacent bool
				want     []string
			}{
				{1, false, []string{"A2"}},
				{2, true, []string{"A4", "A5"}}, // A2-A3 and A3-A4 hold A3, A1-A2 has A2 booked
			} {
				got := make(chan error, 1)
				var c reservation.Confirmation
				go func() {
					var err error
					c, err = s.svc.Book(context.Background(), reservation.BookRequest{ScreeningID: s.sc.ID, Count: tc.count, Adjacent: tc.adjacent, Customer: "c"})
					got <- err
				}()
				select {
				case err := <-got:
					if err != nil || !slices.Equal(c.Booking.Seats, tc.want) {
						t.Fatalf("best %d: %v, %v; want %v, the next best", tc.count, c.Booking.Seats, err, tc.want)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("best-available for %d seats waited on the locked seat A3 (still waiting after 20s)", tc.count)
				}
			}
			// Only A1 and the locked A3 are left: two side by side is none.
			_, err := s.svc.Book(t.Context(), reservation.BookRequest{ScreeningID: s.sc.ID, Count: 2, Adjacent: true, Customer: "c"})
			if !errors.Is(err, reservation.ErrSoldOut) {
				t.Fatalf("2 adjacent with A1 free and A3 being taken: %v, want ErrSoldOut", err)
			}
		})
	}
}
