package main

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"
)

func TestLinearizable(t *testing.T) {
	// The final seat map is read from 100 to 110 ms.
	final := func(seats seatMap) snapshot { return snapshot{seats: seats, call: ms(100), done: ms(110)} }
	tests := []struct {
		name    string
		records []record
		before  seatMap
		after   seatMap
		owners  map[string]string
		want    verdict
		seats   []string
	}{
		{
			name:    "clean race for one seat",
			records: []record{ok("a", "b1", 0, 10, "A1"), taken("b", 0, 10, []string{"A1"}), taken("c", 20, 30, []string{"A1"})},
			after:   seatMap{"s/A1": "b1"},
			want:    linearizable,
		},
		{
			name: "409 that overlaps the winner may be ordered after it",
			// b's 409 answered before a's 201, but they overlap.
			records: []record{ok("a", "b1", 0, 10, "A1"), taken("b", 2, 5, []string{"A1"})},
			after:   seatMap{"s/A1": "b1"},
			want:    linearizable,
		},
		{
			name:    "double booking, concurrent",
			records: []record{ok("a", "b1", 0, 10, "A1"), ok("b", "b2", 5, 15, "A1")},
			after:   seatMap{"s/A1": "b2"},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name:    "double booking, one after the other, even if the map looks fine",
			records: []record{ok("a", "b1", 0, 10, "A1"), ok("b", "b2", 20, 30, "A1"), ok("c", "b3", 0, 10, "A2")},
			after:   seatMap{"s/A1": "b2", "s/A2": "b3"},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name:    "lost booking: confirmed, then free",
			records: []record{ok("a", "b1", 0, 10, "A1")},
			after:   seatMap{"s/A1": ""},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name:    "409 for a seat nobody holds",
			records: []record{taken("a", 0, 10, []string{"A1"})},
			after:   seatMap{"s/A1": ""},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name:    "409 before the winner was even sent",
			records: []record{taken("a", 0, 10, []string{"A1"}), ok("b", "b1", 20, 30, "A1")},
			after:   seatMap{"s/A1": "b1"},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name: "early 409 among late ones",
			records: []record{taken("c", 40, 50, []string{"A1"}), ok("b", "b1", 20, 30, "A1"),
				taken("a", 0, 10, []string{"A1"}), taken("d", 45, 55, []string{"A1"})},
			after: seatMap{"s/A1": "b1"},
			want:  notLinearizable,
			seats: []string{"s/A1"},
		},
		{
			name:    "lost answer that booked",
			records: []record{lostAnswer("a", 0, 10, "A1"), taken("b", 20, 30, []string{"A1"})},
			after:   seatMap{"s/A1": "b9"},
			owners:  map[string]string{"b9": "a"},
			want:    linearizable,
		},
		{
			name:    "lost answer that did not book",
			records: []record{lostAnswer("a", 0, 10, "A1"), ok("b", "b1", 20, 30, "A1")},
			after:   seatMap{"s/A1": "b1"},
			want:    linearizable,
		},
		{
			name: "lost answer cannot excuse a double booking",
			records: []record{lostAnswer("a", 0, 10, "A1"), ok("b", "b1", 20, 30, "A1"),
				ok("c", "b2", 40, 50, "A1")},
			after: seatMap{"s/A1": "b2"},
			want:  notLinearizable,
			seats: []string{"s/A1"},
		},
		{
			name:    "unnamed holder matches an unconfirmed booking only",
			records: []record{lostAnswer("a", 0, 10, "A1")},
			after:   seatMap{"s/A1": unnamedHolder},
			want:    linearizable,
		},
		{
			name:    "unnamed holder where a confirmed booking should be",
			records: []record{ok("a", "b1", 0, 10, "A1")},
			after:   seatMap{"s/A1": unnamedHolder},
			want:    notLinearizable,
			seats:   []string{"s/A1"},
		},
		{
			name:    "booked in the map with no request at all",
			records: []record{ok("a", "b1", 0, 10, "A1")},
			after:   seatMap{"s/A1": "b1", "s/A2": "b9"},
			want:    notLinearizable,
			seats:   []string{"s/A2"},
		},
		{
			name:    "seat held before the run",
			records: []record{taken("a", 0, 10, []string{"A1"})},
			before:  seatMap{"s/A1": "old"},
			after:   seatMap{"s/A1": "old"},
			want:    linearizable,
		},
		{
			name: "multi-seat 409 constrains only the seats it lists",
			// c wanted A1+A2 and was told A1 was taken; A2 stays free.
			records: []record{ok("a", "b1", 0, 10, "A1"), taken("c", 20, 30, []string{"A1", "A2"}, "A1")},
			after:   seatMap{"s/A1": "b1", "s/A2": ""},
			want:    linearizable,
		},
		{
			name: "multi-seat booking half overwritten",
			records: []record{ok("a", "b1", 0, 10, "A1", "A2"), ok("b", "b2", 5, 15, "A2", "A3"),
				ok("c", "b3", 0, 10, "A5")},
			after: seatMap{"s/A1": "b1", "s/A2": "b2", "s/A3": "b2", "s/A5": "b3"},
			want:  notLinearizable,
			seats: []string{"s/A2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := histories(tt.records, tt.before, final(tt.after), tt.owners)
			got := checkLinearizable(h, 10*time.Second)
			if got.verdict != tt.want || !reflect.DeepEqual(got.seats, tt.seats) {
				t.Errorf("got %s %v, want %s %v", got.verdict, got.seats, tt.want, tt.seats)
			}
		})
	}
}

func TestLinearizableHotSeatAtScale(t *testing.T) {
	// 64 clients hammer one seat: two of them get 201, thousands get 409
	// or no answer. A checker that explores every order of the 409s would
	// run out of time instead of answering false.
	var records []record
	for i := range 5000 {
		from := i / 64 * 10
		switch c := "c" + strconv.Itoa(i); {
		case i == 0:
			records = append(records, ok(c, "b1", from, from+5, "A1"))
		case i == 3000:
			records = append(records, ok(c, "b2", from, from+5, "A1"))
		case i%10 == 0:
			records = append(records, lostAnswer(c, from, from+5, "A1"))
		default:
			records = append(records, taken(c, from, from+9, []string{"A1"}))
		}
	}
	final := snapshot{seats: seatMap{"s/A1": "b2"}, call: ms(1_000_000), done: ms(1_000_001)}
	got := checkLinearizable(histories(records, nil, final, nil), 20*time.Second)
	if got.verdict != notLinearizable {
		t.Errorf("verdict = %s, want false", got.verdict)
	}
	// Without the second 201 the same history is fine.
	records[3000] = taken("c3000", 3000/64*10, 3000/64*10+9, []string{"A1"})
	final.seats["s/A1"] = "b1"
	if got := checkLinearizable(histories(records, nil, final, nil), 20*time.Second); got.verdict != linearizable {
		t.Errorf("verdict = %s, want true", got.verdict)
	}
}

func TestLinearizableOutOfTime(t *testing.T) {
	h := histories([]record{ok("a", "b1", 0, 10, "A1")}, nil, snapshot{seats: seatMap{"s/A1": "b1"}}, nil)
	if got := checkLinearizable(h, -time.Second); got.verdict != unknownVerdict {
		t.Errorf("verdict = %s, want unknown", got.verdict)
	}
}

func TestVerdictJSON(t *testing.T) {
	for v, want := range map[verdict]string{linearizable: "true", notLinearizable: "false", unknownVerdict: `"unknown"`} {
		got, err := json.Marshal(v)
		if err != nil || string(got) != want {
			t.Errorf("json.Marshal(%s) = %s, %v; want %s", v, got, err, want)
		}
	}
}
