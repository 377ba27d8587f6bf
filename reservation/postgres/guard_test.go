package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestSeatWritable states the write guard (seat_writable, migration 0009)
// case by case, on seat rows built in the query: who may give a seat away,
// by its booking, its hold and its fence.
func TestSeatWritable(t *testing.T) {
	url := testenv.NewDatabase(t)
	open(t, url) // migrates
	conn := admin(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	const (
		mine  = "00000000-0000-4000-8000-000000000001"
		other = "00000000-0000-4000-8000-000000000002"
	)
	// A seat row: its booking, its hold, the hold's expiry relative to the
	// database's clock, and its fence.
	type seat struct {
		booking, hold string
		expiresIn     time.Duration
		fence         int64
	}
	cases := []struct {
		name  string
		seat  seat
		fence int64  // the write's
		hold  string // the write's: a confirmation's hold, or "" for a new write
		want  bool
	}{
		{"free seat, newer fence", seat{fence: 3}, 4, "", true},
		{"free seat, same fence", seat{fence: 3}, 3, "", false},
		{"free seat, older fence", seat{fence: 3}, 2, "", false},
		{"free seat, no fencing", seat{fence: 3}, 0, "", true},
		{"booked seat", seat{booking: other}, 4, "", false},
		{"seat held live", seat{hold: other, expiresIn: time.Hour}, 4, "", false},
		{"seat whose hold expired", seat{hold: other, expiresIn: -time.Hour}, 4, "", true},
		{"confirmation of its live hold", seat{hold: mine, expiresIn: time.Hour}, 0, mine, true},
		{"confirmation of its expired hold", seat{hold: mine, expiresIn: -time.Hour}, 0, mine, false},
		{"confirmation of another's hold", seat{hold: other, expiresIn: time.Hour}, 0, mine, false},
		{"confirmation of a seat no longer held", seat{}, 0, mine, false},
		{"confirmation of a booked seat", seat{booking: other}, 0, mine, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got bool
			err := conn.QueryRow(ctx, `
				SELECT seat_writable(ROW('sc', 'A1', nullif($1, '')::uuid, $4::bigint,
				                         nullif($2, '')::uuid,
				                         CASE WHEN $2 <> '' THEN clock_timestamp() + $3::interval END)::seats,
				                     $5, nullif($6, '')::uuid)`,
				c.seat.booking, c.seat.hold, c.seat.expiresIn, c.seat.fence, c.fence, c.hold).Scan(&got)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("seat_writable = %v, want %v", got, c.want)
			}
		})
	}
}
