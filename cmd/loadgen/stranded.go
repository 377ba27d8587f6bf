package main

import (
	"fmt"
	"strings"
	"time"
)

// Stranded single seats, and which of them best available could have
// avoided. A free seat alone in its row is not always the picker's fault:
// a buyer of 1 seat when every free run is a pair must leave one alone,
// and an abandoned single-seat hold gives its seat back alone. The rule
// (docs/api.md, best available) only forbids a choice that leaves one
// alone when a choice of the same count that leaves none existed. So each
// single seat of the map read is put down to one cause:
//
//   - before: it was alone before the run (its neighbours were taken
//     before the run, or are the row's ends);
//   - came_back: the seat itself may have been held while the request
//     that took its last neighbour ran, and that hold's end gave it back
//     alone (a seat left alone by a choice, then held and given back, is
//     still the choice's);
//   - concurrent: its two neighbours were taken by requests in flight at
//     once, neither of which could see the other's choice;
//   - unknown: a neighbour's holder is not among the answered holds, or
//     a hold request went unanswered meanwhile (its seats are unknown);
//   - no_choice: the request that took the last neighbour had no choice
//     of its count that left none, by every seat map it may have seen;
//   - avoidable: it had one.
//
// "By every seat map it may have seen": loadgen knows when each answered
// hold began (between its request's send and answer) and ended (its
// expiry, with strandSlack for the server's clock; never, once
// confirmed). A choice counts as one that left none only when it was
// certainly free throughout the request, and each seat beside it was
// certainly taken throughout, or certainly free together with the seat
// beyond it. So an avoidable seat is certain, as a FIFO inversion is;
// the others are not excuses but what the requests allowed.

// The causes of a stranded single seat.
const (
	strandBefore     = "before"
	strandCameBack   = "came_back"
	strandConcurrent = "concurrent"
	strandUnknown    = "unknown"
	strandNoChoice   = "no_choice"
	strandAvoidable  = "avoidable"
)

// strandSlack is how far the server's clock, which dates a hold's expiry,
// may be from loadgen's.
const strandSlack = 100 * time.Millisecond

// never is the end of a confirmed hold.
const never = time.Duration(1<<63 - 1)

// span is a time within a run, as offsets from its start: a moment known
// to lie between from and to.
type span struct{ from, to time.Duration }

// heldSeats is one answered hold of a run: its seats were held from a
// moment within begin until a moment within end.
type heldSeats struct {
	seats []int // seat indexes, row by row from 0
	count int   // the seats asked for (adjacent when more than 1)
	begin span  // the request's send and answer
	end   span
}

// strandWorld is what loadgen knows of a run's seats.
type strandWorld struct {
	rows, perRow int
	before       []bool // by seat index: taken before the run
	holds        []heldSeats
	unanswered   []time.Duration // sends of hold requests with no answer
}

// newStrandWorld gathers the seats booked before the run (keyed by
// seatKey) and the answered holds of the hold requests.
func newStrandWorld(rows, perRow int, before seatMap, attempts []record) *strandWorld {
	w := &strandWorld{rows: rows, perRow: perRow, before: make([]bool, rows*perRow)}
	for key, b := range before {
		if i, ok := w.index(key[strings.LastIndex(key, "/")+1:]); ok && b != "" {
			w.before[i] = true
		}
	}
	for _, r := range attempts {
		switch {
		case r.ambiguous():
			w.unanswered = append(w.unanswered, r.sent)
			continue
		case !r.confirmed() || r.ticket == nil:
			continue
		}
		t := r.ticket
		h := heldSeats{count: t.count, begin: span{r.sent, r.done}, end: span{never, never}}
		for _, id := range t.hold.Seats {
			if i, ok := w.index(id); ok {
				h.seats = append(h.seats, i)
			}
		}
		c := t.confirm
		if c == nil || !c.confirmed() {
			exp := r.done + t.hold.ExpiresAt.Sub(t.heldAt)
			h.end = span{exp - strandSlack, exp + strandSlack}
			if c != nil && c.ambiguous() {
				h.end.to = never // the confirm may have booked them
			}
		}
		w.holds = append(w.holds, h)
	}
	return w
}

// index is the seat index of a seat id of the layout.
func (w *strandWorld) index(id string) (int, bool) {
	var row byte
	var n int
	if _, err := fmt.Sscanf(id, "%c%d", &row, &n); err != nil || row < 'A' || int(row-'A') >= w.rows || n < 1 || n > w.perRow {
		return 0, false
	}
	return int(row-'A')*w.perRow + n - 1, true
}

// strandCauses counts the single seats alone in the seat map read during
// read by their cause (see above).
func (w *strandWorld) strandCauses(seats []seatState, read span) map[string]int {
	free := make([]bool, w.rows*w.perRow)
	for _, s := range seats {
		if i, ok := w.index(s.ID); ok && s.Status == "free" {
			free[i] = true
		}
	}
	causes := map[string]int{}
	for i, f := range free {
		if f && !w.freeAt(free, i-1, i) && !w.freeAt(free, i+1, i) {
			causes[w.cause(i, read)]++
		}
	}
	return causes
}

// freeAt reports whether seat j, beside seat i in its row, is free in the
// map; outside the row it is not.
func (w *strandWorld) freeAt(free []bool, j, i int) bool {
	return j >= 0 && j < len(free) && j/w.perRow == i/w.perRow && free[j]
}

// cause says why seat i was alone in the map read during read.
func (w *strandWorld) cause(i int, read span) string {
	var holders []*heldSeats
	for _, j := range w.beside(i) {
		if w.before[j] {
			continue
		}
		h := w.holderAt(j, read)
		if h == nil {
			return strandUnknown
		}
		holders = append(holders, h)
	}
	if len(holders) == 0 {
		return strandBefore
	}
	last := holders[0] // the holder whose request was sent last
	for _, h := range holders[1:] {
		if h.begin.from > last.begin.from {
			last = h
		}
	}
	switch {
	case w.heldDuring(i, last):
		return strandCameBack
	case len(holders) == 2 && holders[0] != holders[1] && holders[0].begin.to > holders[1].begin.from && holders[1].begin.to > holders[0].begin.from:
		return strandConcurrent
	case w.unansweredBefore(last.begin.to):
		return strandUnknown
	case w.hadChoice(last):
		return strandAvoidable
	}
	return strandNoChoice
}

// beside returns the seats beside seat i in its row.
func (w *strandWorld) beside(i int) []int {
	var out []int
	if i%w.perRow > 0 {
		out = append(out, i-1)
	}
	if i%w.perRow < w.perRow-1 {
		out = append(out, i+1)
	}
	return out
}

// holderAt returns the answered hold that had seat j when the map was
// read, or nil.
func (w *strandWorld) holderAt(j int, read span) *heldSeats {
	for k := range w.holds {
		h := &w.holds[k]
		if h.has(j) && h.begin.to <= read.to && h.end.to >= read.from {
			return h
		}
	}
	return nil
}

// heldDuring reports whether seat i may have been held at some moment of
// the request of hold s: then s did not leave a free seat alone, the
// seat's own hold did when it ended.
func (w *strandWorld) heldDuring(i int, s *heldSeats) bool {
	_, maybe := w.takenDuring(s)
	return maybe[i]
}

// unansweredBefore reports whether a hold request with no answer was sent
// before t: its seats, if it got any, are unknown.
func (w *strandWorld) unansweredBefore(t time.Duration) bool {
	for _, s := range w.unanswered {
		if s < t {
			return true
		}
	}
	return false
}

func (h *heldSeats) has(i int) bool {
	for _, s := range h.seats {
		if s == i {
			return true
		}
	}
	return false
}

// hadChoice reports whether, throughout the request of hold s, a set of
// its count (side by side when more than 1) was certainly free and
// certainly left no seat alone (see above).
func (w *strandWorld) hadChoice(s *heldSeats) bool {
	surely, maybe := w.takenDuring(s)
	n := max(s.count, 1)
	for first := 0; first < len(surely); first++ {
		if first%w.perRow+n > w.perRow {
			continue
		}
		ok := true
		for i := first; i < first+n && ok; i++ {
			ok = !maybe[i]
		}
		if ok && w.leavesNone(surely, maybe, first, first+n-1) {
			return true
		}
	}
	return false
}

// leavesNone reports whether taking seats lo..hi of one row certainly
// leaves no seat alone: each seat beside them is surely taken, or surely
// free with the seat beyond it surely free too.
func (w *strandWorld) leavesNone(surely, maybe []bool, lo, hi int) bool {
	row := lo / w.perRow
	inRow := func(j int) bool { return j >= 0 && j/w.perRow == row && j < len(surely) }
	for _, side := range [2][2]int{{lo - 1, lo - 2}, {hi + 1, hi + 2}} {
		nb, beyond := side[0], side[1]
		if !inRow(nb) || surely[nb] {
			continue
		}
		if maybe[nb] || !inRow(beyond) || maybe[beyond] {
			return false
		}
	}
	return true
}

// takenDuring returns, by seat index, the seats surely taken throughout
// the request of hold s and those maybe taken at some moment of it (by
// every other answered hold, and before the run).
func (w *strandWorld) takenDuring(s *heldSeats) (surely, maybe []bool) {
	surely, maybe = make([]bool, len(w.before)), make([]bool, len(w.before))
	copy(surely, w.before)
	copy(maybe, w.before)
	for k := range w.holds {
		h := &w.holds[k]
		if h == s {
			continue
		}
		sure := h.begin.to <= s.begin.from && h.end.from >= s.begin.to
		may := h.begin.from <= s.begin.to && h.end.to >= s.begin.from
		for _, i := range h.seats {
			surely[i] = surely[i] || sure
			maybe[i] = maybe[i] || may
		}
	}
	return surely, maybe
}
