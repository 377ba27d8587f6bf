package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// heldFor is an answered hold request of count seats, sent at second from
// and answered at second to, its hold lasting ttl seconds; confirmed
// holds keep their seats.
func heldFor(seats []string, from, to, ttl float64, confirmed bool) record {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := record{sent: sec(from), done: sec(to), answer: answer{status: http.StatusCreated},
		ticket: &holdRun{count: len(seats), heldAt: at, hold: holdAnswer{Seats: seats, ExpiresAt: at.Add(sec(ttl))}}}
	if confirmed {
		r.ticket.confirm = &record{answer: answer{status: http.StatusCreated}}
	}
	return r
}

// rowMap is the seat map of row A with the seats given free.
func rowMap(perRow int, free ...string) []seatState {
	isFree := map[string]bool{}
	for _, id := range free {
		isFree[id] = true
	}
	var out []seatState
	for n := 1; n <= perRow; n++ {
		id := fmt.Sprintf("A%d", n)
		s := seatState{ID: id, Status: "booked"}
		if isFree[id] {
			s.Status = "free"
		}
		out = append(out, s)
	}
	return out
}

// Each stranded single seat is put down to the cause the history shows,
// and only a request that certainly had a choice that left none is
// avoidable.
func TestStrandCauses(t *testing.T) {
	read := span{10 * time.Second, 11 * time.Second}
	for _, tc := range []struct {
		name     string
		perRow   int
		before   seatMap
		attempts []record
		free     []string
		want     string
	}{
		{name: "a pair beside a free seat when the pair beside the taken one left none",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandAvoidable,
			attempts: []record{heldFor([]string{"A1"}, 1, 2, 60, true), heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
		{name: "a pair in a run of three has no choice",
			perRow: 4, free: []string{"A2"}, want: strandNoChoice,
			attempts: []record{heldFor([]string{"A1"}, 1, 2, 60, true), heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
		{name: "two requests in flight at once",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandConcurrent,
			attempts: []record{heldFor([]string{"A1"}, 1, 3.5, 60, true), heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
		{name: "an abandoned hold of the seat itself gives it back alone",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandCameBack,
			attempts: []record{heldFor([]string{"A1"}, 1, 2, 60, true), heldFor([]string{"A2"}, 2.2, 2.5, 2, false), heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
		{name: "a seat left alone by a choice, then held and given back, is the choice's",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandAvoidable,
			attempts: []record{heldFor([]string{"A1"}, 1, 2, 60, true), heldFor([]string{"A3", "A4"}, 3, 4, 60, true), heldFor([]string{"A2"}, 5, 6, 2, false)}},
		{name: "alone before the run",
			perRow: 6, before: seatMap{seatKey("s", "A1"): "b1", seatKey("s", "A3"): "b2", seatKey("s", "A4"): ""}, free: []string{"A2", "A4", "A5", "A6"}, want: strandBefore},
		{name: "a hold request with no answer may have taken anything",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandUnknown,
			attempts: []record{heldFor([]string{"A1"}, 1, 2, 60, true), {sent: 2500 * time.Millisecond, done: 9 * time.Second}, heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
		{name: "a neighbour nobody answered for",
			perRow: 6, free: []string{"A2", "A5", "A6"}, want: strandUnknown,
			attempts: []record{heldFor([]string{"A3", "A4"}, 3, 4, 60, true)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newStrandWorld(1, tc.perRow, tc.before, tc.attempts)
			got := w.strandCauses(rowMap(tc.perRow, tc.free...), read)
			if len(got) != 1 || got[tc.want] != 1 {
				t.Errorf("causes %v, want one %s", got, tc.want)
			}
		})
	}
}

// A run with an avoidable stranded seat fails.
func TestVerdictFailsAvoidableStrandedSeats(t *testing.T) {
	rep := &report{Scenario: scenarioOnSale, OnSale: &onsaleCounts{StrandedSingleSeats: 3, StrandedAvoidable: 1}}
	want := "FAILED: STRANDED AVOIDABLY (1 seat); exit status 1"
	if got := rep.verdictLine(); got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
}
