package reservation_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// TestNoStrandedSingleSeats checks, in both stores, that best available
// does not leave a single free seat alone in a row when a choice of the
// same count leaves none, and takes the best choice when none exists.
func TestNoStrandedSingleSeats(t *testing.T) {
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			svc := reservation.NewService(open(t), reservation.Options{Demo: true, DefaultLock: reservation.LockNone})
			for _, tc := range strandedCases {
				t.Run(tc.name, func(t *testing.T) { tc.check(t, svc) })
			}
		})
	}
}

// bothStores open the in-memory store and one on a fresh Postgres database.
var bothStores = map[string]func(t *testing.T) reservation.Store{
	"memory": func(*testing.T) reservation.Store { return memory.New() },
	"postgres": func(t *testing.T) reservation.Store {
		store, err := postgres.Open(t.Context(), testenv.NewDatabase(t), postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		return store
	},
}

// TestNoStrandedSeatBesideAConfirm checks, in both stores, that a hold
// confirmed while best available reads the seat map (its holds and its
// bookings, two reads) still counts as taken. On a row of 6 with A1 held,
// a pair is A2-A3; had A1 looked free, A3-A4 would have seemed to leave
// the pair A1-A2 and left A2 alone. The confirm is made to land between
// the two reads, whichever comes first.
func TestNoStrandedSeatBesideAConfirm(t *testing.T) {
	for name, open := range bothStores {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			store := &confirmingStore{Store: open(t)}
			svc := reservation.NewService(store, reservation.Options{Demo: true, DefaultLock: reservation.LockNone})
			sc := screeningOf(t, svc, 1, 6, reservation.LockNone)
			h, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "early"})
			if err != nil {
				t.Fatal(err)
			}
			confirmed := make(chan error, 1)
			confirm := func() {
				_, err := svc.ConfirmHold(ctx, h.Hold.ID, h.Token)
				confirmed <- err
			}
			store.between.Store(&confirm)
			c, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Count: 2, Adjacent: true, Customer: "c"})
			if err := <-confirmed; err != nil {
				t.Fatalf("confirm between the reads: %v", err)
			}
			if want := []string{"A2", "A3"}; err != nil || !slices.Equal(c.Booking.Seats, want) {
				t.Errorf("2 best adjacent = %v, %v; want %v (A1 confirmed during the read)", c.Booking.Seats, err, want)
			}
		})
	}
}

// confirmingStore runs between, once, right after the first read of the
// seat map's holds or bookings that follows its being set.
type confirmingStore struct {
	reservation.Store
	between atomic.Pointer[func()]
}

func (s *confirmingStore) after() {
	if f := s.between.Swap(nil); f != nil {
		(*f)()
	}
}

func (s *confirmingStore) BookedSeats(ctx context.Context, screeningID string) (map[string]string, error) {
	defer s.after()
	return s.Store.BookedSeats(ctx, screeningID)
}

func (s *confirmingStore) SeatHolds(ctx context.Context, screeningID string) (map[string]time.Time, error) {
	defer s.after()
	return s.Store.SeatHolds(ctx, screeningID)
}

type strandedCase struct {
	name         string
	rows, perRow int
	booked, held []string // taken before the request
	count        int
	adjacent     bool
	want         []string
}

var strandedCases = []strandedCase{
	{name: "a pair goes to the end of an empty row of 5, not the middle that leaves A1 alone",
		rows: 1, perRow: 5, count: 2, adjacent: true, want: []string{"A1", "A2"}},
	{name: "a single seat next to a taken one, not the middle that leaves A2 alone",
		rows: 1, perRow: 5, booked: []string{"A1"}, count: 1, want: []string{"A2"}},
	{name: "no choice leaves none in a row of 3: the best pair",
		rows: 1, perRow: 3, count: 2, adjacent: true, want: []string{"A1", "A2"}},
	{name: "two singles that leave none, not the best two that leave A1 alone",
		rows: 1, perRow: 5, count: 2, want: []string{"A1", "A2"}},
	{name: "a booked seat splits the row: the pair before it, not the one that leaves A6 alone",
		rows: 1, perRow: 6, booked: []string{"A3"}, count: 2, adjacent: true, want: []string{"A1", "A2"}},
	{name: "a held seat counts as taken: A3-A4 would leave A2 alone",
		rows: 1, perRow: 6, held: []string{"A1"}, count: 2, adjacent: true, want: []string{"A2", "A3"}},
	{name: "the next row when every choice in the best row strands one",
		rows: 3, perRow: 5, booked: []string{"B3"}, count: 1, want: []string{"C3"}},
	{name: "a stranded seat is taken first when it strands none",
		rows: 1, perRow: 4, booked: []string{"A2"}, count: 1, want: []string{"A1"}},
}

func (tc strandedCase) check(t *testing.T, svc *reservation.Service) {
	ctx := t.Context()
	sc := screeningOf(t, svc, tc.rows, tc.perRow, reservation.LockNone)
	if len(tc.booked) > 0 {
		if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: tc.booked, Customer: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(tc.held) > 0 {
		if _, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: tc.held, Customer: "before"}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Count: tc.count, Adjacent: tc.adjacent, Customer: "c"})
	if err != nil || !slices.Equal(c.Booking.Seats, tc.want) {
		t.Errorf("%d best (adjacent %t) = %v, %v; want %v", tc.count, tc.adjacent, c.Booking.Seats, err, tc.want)
	}
}
