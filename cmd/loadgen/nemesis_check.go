package main

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// anomaly is one thing a check found wrong, with the smallest piece of
// history that shows it.
type anomaly struct {
	Kind    string   `json:"kind"` // double_booking, lost_booking, not_linearizable, ledger, status_500, fault
	Seat    string   `json:"seat,omitempty"`
	Message string   `json:"message"`
	History []histOp `json:"history,omitempty"`
	// Visualization is porcupine's page of a non-linearizable seat, a
	// file next to the report.
	Visualization string `json:"visualization,omitempty"`
}

// maxExcerpt bounds the history shown with one anomaly.
const maxExcerpt = 40

// finalState is the seat maps read after the run: every taken seat's
// register value (see nemesisModel), and the booking on each booked seat.
type finalState struct {
	values   map[string]string // screening/seat -> b:alice, b:*, h:*
	bookings map[string]string // screening/seat -> booking id
	call     int64             // when the read began and ended (history ns)
	done     int64
}

// bookingOps are the operations that make a booking when they succeed.
func makesBooking(op histOp) bool {
	return op.Outcome == outcomeOK && op.Booking != "" &&
		(op.Kind == kindBook || op.Kind == kindRetry || op.Kind == kindGiveUp || op.Kind == kindConfirm)
}

// cancelledOf is every booking a cancel was sent for (whatever its
// outcome), with the earliest such invocation.
func cancelledOf(ops []histOp) map[string]int64 {
	m := map[string]int64{}
	for _, op := range ops {
		if op.Kind == kindCancel {
			if t, ok := m[op.Of]; !ok || op.InvokeNS < t {
				m[op.Of] = op.InvokeNS
			}
		}
	}
	return m
}

// doubleBookings finds seats that two customers were told were theirs at
// once: a booking answered before another's was sent, for the same seat,
// with no cancel of the first sent before the second was answered.
func doubleBookings(ops []histOp) []anomaly {
	cancels := cancelledOf(ops)
	bySeat := map[string][]histOp{}
	for _, op := range ops {
		if makesBooking(op) {
			for _, s := range op.Seats {
				k := seatKey(op.Screening, s)
				bySeat[k] = append(bySeat[k], op)
			}
		}
	}
	var out []anomaly
	for _, key := range sortedKeys(bySeat) {
		bs := bySeat[key]
		slices.SortFunc(bs, func(a, b histOp) int { return cmp.Compare(a.DoneNS, b.DoneNS) })
		for i := 1; i < len(bs); i++ {
			first, second := bs[i-1], bs[i]
			t, cancelled := cancels[first.Booking]
			if first.Booking == second.Booking || (cancelled && t < second.DoneNS) {
				continue
			}
			out = append(out, anomaly{Kind: "double_booking", Seat: key,
				Message: fmt.Sprintf("seat %s confirmed to %s (booking %s) and to %s (booking %s), with no cancel in between", key, first.Customer, first.Booking, second.Customer, second.Booking),
				History: []histOp{first, second}})
			break
		}
	}
	return out
}

// lostBookings finds confirmed bookings, never cancelled, that the final
// seat maps do not show on all their seats.
func lostBookings(ops []histOp, final finalState) []anomaly {
	cancels := cancelledOf(ops)
	var out []anomaly
	for _, op := range ops {
		if !makesBooking(op) {
			continue
		}
		if _, ok := cancels[op.Booking]; ok {
			continue
		}
		for _, s := range op.Seats {
			if got := final.bookings[seatKey(op.Screening, s)]; got != op.Booking {
				out = append(out, anomaly{Kind: "lost_booking", Seat: seatKey(op.Screening, s),
					Message: fmt.Sprintf("booking %s of %s was confirmed and never cancelled, but the final seat map shows %q on %s", op.Booking, op.Customer, got, s),
					History: seatExcerpt(ops, op.Screening, s, op.InvokeNS)})
				break
			}
		}
	}
	return out
}

// status500s finds answers in the 5xx range other than 503: a backend
// failure must be a 503, and nothing may be a 500.
func status500s(ops []histOp) []anomaly {
	var out []anomaly
	for _, op := range ops {
		if op.Status >= 500 && op.Status != http.StatusServiceUnavailable {
			out = append(out, anomaly{Kind: "status_500", Message: fmt.Sprintf("%s on %s answered %d", op.Kind, op.Instance, op.Status), History: []histOp{op}})
		}
	}
	return out
}

// seatExcerpt is the history of one seat from a little before since: the
// operations that touched it, at most maxExcerpt.
func seatExcerpt(ops []histOp, screening, seat string, since int64) []histOp {
	var out []histOp
	for _, op := range ops {
		if op.Screening == screening && slices.Contains(op.Seats, seat) && op.DoneNS >= since-int64(time.Second) {
			out = append(out, op)
		}
	}
	return out[:min(len(out), maxExcerpt)]
}

// linearizabilityCheck runs porcupine on every seat's history within
// budget (see checkSeats). A seat found illegal gets an anomaly with its
// history and, in dir, porcupine's visualisation (for the first few).
func linearizabilityCheck(ops []histOp, final finalState, budget time.Duration, dir string) (verdict, []anomaly) {
	h := seatOps(ops, final.values, final.call, final.done)
	model := nemesisModel()
	keys, results := checkSeats(model, h, budget)
	var out []anomaly
	for i, key := range keys {
		if results[i] != porcupine.Illegal {
			continue
		}
		a := anomaly{Kind: "not_linearizable", Seat: key, Message: "no order of the operations on seat " + key + " explains what they returned"}
		screening, seat, _ := strings.Cut(key, "/")
		a.History = illegalExcerpt(model, h[key], ops, screening, seat)
		if len(out) < 3 && dir != "" {
			// The seat was decided once within the budget; deciding it
			// again, for the visualisation's information, takes as long.
			_, info := porcupine.CheckOperationsVerbose(model, h[key], budget)
			name := fmt.Sprintf("porcupine-%d.html", len(out))
			if porcupine.VisualizePath(model, info, dir+"/"+name) == nil {
				a.Visualization = name
			}
		}
		out = append(out, a)
	}
	return verdictOf(results), out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// illegalExcerpt is the smallest piece of a seat's history that no order
// explains: the operations around the end of its shortest illegal prefix
// (by invocation), or its last ones when only the final read contradicts
// them.
func illegalExcerpt(model porcupine.Model, h []porcupine.Operation, ops []histOp, screening, seat string) []histOp {
	sorted := slices.Clone(h)
	slices.SortFunc(sorted, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	end := sorted[len(sorted)-1].Call
	for n := 1; n < len(sorted); n++ {
		if porcupine.CheckOperationsTimeout(model, sorted[:n], time.Second) == porcupine.Illegal {
			end = sorted[n-1].Call
			break
		}
	}
	var out []histOp
	for _, op := range ops {
		if op.Screening == screening && slices.Contains(op.Seats, seat) && op.InvokeNS <= end {
			out = append(out, op)
		}
	}
	return out[max(0, len(out)-maxExcerpt):]
}
