package main

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// The hand-made histories below use screening "s" and times in
// milliseconds.

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ok is a request answered 201 with booking id.
func ok(customer, id string, from, to int, seats ...string) record {
	r := record{screening: "s", seats: seats, customer: customer, sent: ms(from), done: ms(to), intended: ms(from)}
	r.status, r.booking = http.StatusCreated, booking{ID: id, Seats: seats, Customer: customer}
	return r
}

// taken is a request answered 409 seat_taken listing listed.
func taken(customer string, from, to int, seats []string, listed ...string) record {
	r := record{screening: "s", seats: seats, customer: customer, sent: ms(from), done: ms(to), intended: ms(from)}
	r.status, r.code, r.taken = http.StatusConflict, "seat_taken", listed
	return r
}

// lostAnswer is a request that got no answer.
func lostAnswer(customer string, from, to int, seats ...string) record {
	r := record{screening: "s", seats: seats, customer: customer, sent: ms(from), done: ms(to), intended: ms(from)}
	r.err = errors.New("timeout")
	return r
}

func TestCount(t *testing.T) {
	tests := []struct {
		name    string
		records []record
		before  seatMap
		after   seatMap
		owners  map[string]string
		want    counts
	}{
		{
			name:    "clean: one winner per seat, losers told 409",
			records: []record{ok("a", "b1", 0, 10, "A1"), taken("b", 5, 15, []string{"A1"}), ok("c", "b2", 0, 10, "A2", "A3")},
			after:   seatMap{"s/A1": "b1", "s/A2": "b2", "s/A3": "b2", "s/A4": ""},
		},
		{
			name:    "double booking: two 201s for one seat, the first overwritten",
			records: []record{ok("a", "b1", 0, 10, "A1"), ok("b", "b2", 5, 15, "A1")},
			after:   seatMap{"s/A1": "b2"},
			want:    counts{DoubleBookedSeats: 1, LostBookings: 1},
		},
		{
			name:    "double booking of a seat held before the run",
			records: []record{ok("a", "b1", 0, 10, "A1")},
			before:  seatMap{"s/A1": "old"},
			after:   seatMap{"s/A1": "b1"},
			want:    counts{DoubleBookedSeats: 1},
		},
		{
			name:    "lost booking: confirmed, then free in the map",
			records: []record{ok("a", "b1", 0, 10, "A1", "A2")},
			after:   seatMap{"s/A1": "b1", "s/A2": ""},
			want:    counts{LostBookings: 1},
		},
		{
			name:    "phantom explained by a lost answer",
			records: []record{lostAnswer("a", 0, 10, "A1")},
			after:   seatMap{"s/A1": "b9"},
			owners:  map[string]string{"b9": "a"},
			want:    counts{PhantomSeats: 1, PhantomSeatsExplained: 1},
		},
		{
			name:    "phantom contradicting a refusal",
			records: []record{taken("a", 0, 10, []string{"A1"})},
			after:   seatMap{"s/A1": "b9"},
			owners:  map[string]string{"b9": "a"},
			want:    counts{PhantomSeats: 1, PhantomSeatsContradicted: 1},
		},
		{
			name:   "phantom of unknown owner: counted, not judged",
			after:  seatMap{"s/A1": "b9", "s/A2": unnamedHolder},
			owners: map[string]string{},
			want:   counts{PhantomSeats: 2},
		},
		{
			name:   "bookings held before the run are not phantoms",
			before: seatMap{"s/A1": "old"},
			after:  seatMap{"s/A1": "old"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := count(tt.records, tt.before, tt.after, tt.owners)
			if got != tt.want {
				t.Errorf("count = %+v, want %+v", got, tt.want)
			}
			wantFailed := tt.want.DoubleBookedSeats+tt.want.LostBookings+tt.want.PhantomSeatsContradicted > 0
			if got.failed() != wantFailed {
				t.Errorf("failed() = %v, want %v", got.failed(), wantFailed)
			}
		})
	}
}

func TestPhantomBookings(t *testing.T) {
	records := []record{ok("a", "b1", 0, 10, "A1")}
	before := seatMap{"s/A2": "old"}
	after := seatMap{"s/A1": "b1", "s/A2": "old", "s/A3": "b7", "s/A4": "b7", "s/A5": "b3", "s/A6": unnamedHolder, "s/A7": ""}
	if got, want := phantomBookings(records, before, after), []string{"b3", "b7"}; !reflect.DeepEqual(got, want) {
		t.Errorf("phantomBookings = %v, want %v", got, want)
	}
}
