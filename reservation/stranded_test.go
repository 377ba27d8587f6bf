package reservation_test

import (
	"slices"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// TestNoStrandedSingleSeats checks, in both stores, that best available
// does not leave a single free seat alone in a row when a choice of the
// same count leaves none, and takes the best choice when none exists.
func TestNoStrandedSingleSeats(t *testing.T) {
	stores := map[string]func(t *testing.T) reservation.Store{
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
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			svc := reservation.NewService(open(t), reservation.Options{Demo: true, DefaultLock: reservation.LockNone})
			for _, tc := range strandedCases {
				t.Run(tc.name, func(t *testing.T) { tc.check(t, svc) })
			}
		})
	}
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
