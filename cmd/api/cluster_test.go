package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

// startCluster starts n instances of the API on one real Redis and one
// fresh Postgres database, all at once, as a deployment would (their
// migrations must serialise).
func startCluster(t *testing.T, n int, args ...string) []*instance {
	t.Helper()
	env := map[string]string{
		"REDIS_URL":    testenv.RedisURL(t),
		"DATABASE_URL": testenv.NewDatabase(t),
		"DEMO_MODE":    "true",
	}
	insts := make([]*instance, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { insts[i], errs[i] = launch(t, defaultLimits(), env, args...) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return insts
}

// outcome is the answer to one booking request of a race.
type outcome struct {
	status  int
	code    string
	booking booking
}

// race sends the bookings at once (after a common start signal), booking
// i to instance targets[i%len(targets)], and returns the answers in order.
func race(t *testing.T, targets []*instance, screeningID string, seats [][]string) []outcome {
	t.Helper()
	out := make([]outcome, len(seats))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range seats {
		wg.Go(func() {
			<-start
			url := targets[i%len(targets)].url + "/v1/screenings/" + screeningID + "/bookings"
			r := call(t, "POST", url, bookingBody(fmt.Sprintf("customer-%d", i), s...))
			out[i].status = r.status
			if r.status == http.StatusCreated {
				out[i].booking = decode[booking](t, r)
			} else {
				out[i].code = decode[apiError](t, r).Error.Code
			}
		})
	}
	close(start)
	wg.Wait()
	return out
}

// sameSeat is the seats of n bookings for race that all want the one seat.
func sameSeat(n int, seat string) [][]string {
	seats := make([][]string, n)
	for i := range seats {
		seats[i] = []string{seat}
	}
	return seats
}

// confirmed returns the bookings that were answered 201.
func confirmed(out []outcome) []booking {
	var bs []booking
	for _, o := range out {
		if o.status == http.StatusCreated {
			bs = append(bs, o.booking)
		}
	}
	return bs
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	insts := startCluster(t, 3, "-lock-wait", "5s")

	t.Run("one hot seat over three instances is booked once", func(t *testing.T) {
		s := createScreening(t, insts[0].url, `{"movie":"Hot","rows":1,"seats_per_row":4}`)
		out := race(t, insts, s.ID, sameSeat(60, "A2"))
		won := confirmed(out)
		if len(won) != 1 {
			t.Fatalf("%d bookings of one seat confirmed, want exactly 1", len(won))
		}
		for _, o := range out {
			if o.status != http.StatusCreated && (o.status != http.StatusConflict || (o.code != "seat_taken" && o.code != "seat_busy")) {
				t.Errorf("answer %d %s, want 201 or 409 seat_taken/seat_busy", o.status, o.code)
			}
		}
		for _, inst := range insts {
			if _, m := seatsOf(t, inst.url, s.ID); m["A2"].BookingID != won[0].ID || m["A1"].Status != "free" {
				t.Errorf("%s: A2 %+v, want booked by %s", inst.url, m["A2"], won[0].ID)
			}
		}
	})

	t.Run("overlapping multi-seat bookings in opposite orders neither deadlock nor book in part", func(t *testing.T) {
		s := createScreening(t, insts[1].url, `{"movie":"Groups","rows":1,"seats_per_row":8,"payment_delay_ms":20}`)
		groups := [][]string{
			{"A1", "A2", "A3"}, {"A3", "A2", "A1"}, {"A3", "A4", "A5"}, {"A5", "A4", "A3"},
			{"A5", "A6", "A7"}, {"A7", "A6", "A5"}, {"A7", "A8", "A1"}, {"A1", "A8", "A7"},
		}
		var seats [][]string
		for range 4 {
			for _, g := range groups {
				g := slices.Clone(g)
				if rand.IntN(2) == 0 {
					slices.Reverse(g)
				}
				seats = append(seats, g)
			}
		}
		out := race(t, insts, s.ID, seats)
		for _, o := range out {
			if o.status != http.StatusCreated && !(o.status == http.StatusConflict && o.code == "seat_taken") {
				// seat_busy here would mean bookings waited for each other
				// for the whole lock wait: a deadlock.
				t.Errorf("answer %d %s, want 201 or 409 seat_taken", o.status, o.code)
			}
		}
		won := confirmed(out)
		if len(won) == 0 {
			t.Fatal("no booking confirmed")
		}
		_, m := seatsOf(t, insts[2].url, s.ID)
		holders := map[string]string{}
		for _, b := range won {
			for _, seat := range b.Seats {
				if other, ok := holders[seat]; ok {
					t.Errorf("seat %s confirmed to %s and %s", seat, other, b.ID)
				}
				holders[seat] = b.ID
				if m[seat].BookingID != b.ID {
					t.Errorf("confirmed booking %s lacks seat %s in the seat map (%+v)", b.ID, seat, m[seat])
				}
			}
		}
		for id, seat := range m {
			if seat.Status == "booked" && holders[id] != seat.BookingID {
				t.Errorf("seat %s is booked by %s, which no 201 answer confirmed with it", id, seat.BookingID)
			}
		}
	})

	// The strategies, side by side on one cluster. Each race books one
	// seat several times with a payment delay that keeps the check and the
	// write far apart; guard=off makes the lock alone responsible.
	for _, tc := range []struct {
		lock, guard string
		instances   int
		doubles     bool // whether the seat is expected to be booked twice
	}{
		{"none", "off", 1, true},
		{"keyed", "off", 2, true},
		{"keyed", "off", 1, false},
		{"global", "off", 1, false},
		{"redis", "off", 3, false},
		{"keyed+redis", "off", 3, false},
		{"none", "fence", 3, false},
	} {
		name := fmt.Sprintf("lock=%s guard=%s on %d instances", tc.lock, tc.guard, tc.instances)
		t.Run(name, func(t *testing.T) {
			s := createScreening(t, insts[0].url, fmt.Sprintf(
				`{"movie":"Strategy","rows":1,"seats_per_row":2,"lock":%q,"guard":%q,"payment_delay_ms":150}`, tc.lock, tc.guard))
			n := 2 * tc.instances
			if tc.instances == 1 {
				n = 4
			}
			won := confirmed(race(t, insts[:tc.instances], s.ID, sameSeat(n, "A1")))
			switch {
			case tc.doubles && len(won) < 2:
				t.Errorf("%d confirmed, want the seat booked twice or more: this strategy is unsafe here", len(won))
			case !tc.doubles && len(won) != 1:
				t.Errorf("%d confirmed, want exactly 1", len(won))
			}
			if t.Failed() || len(won) == 0 {
				return
			}
			// The seat map names one of the confirmed bookings (with
			// guard=off, the last writer).
			_, m := seatsOf(t, insts[0].url, s.ID)
			if !slices.ContainsFunc(won, func(b booking) bool { return b.ID == m["A1"].BookingID }) {
				t.Errorf("A1 held by %q, none of the confirmed bookings", m["A1"].BookingID)
			}
		})
	}
}
