package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// verdict is the result of the linearizability check. In JSON it is true,
// false, or "unknown" when the checker ran out of time.
type verdict string

const (
	linearizable    verdict = "true"
	notLinearizable verdict = "false"
	unknownVerdict  verdict = "unknown"
)

// MarshalJSON writes true and false as JSON booleans.
func (v verdict) MarshalJSON() ([]byte, error) {
	if v == unknownVerdict || v == "" {
		return json.Marshal(string(unknownVerdict))
	}
	return []byte(v), nil
}

// UnmarshalJSON reads what MarshalJSON writes, so that a saved report (and
// the tests) can be read back.
func (v *verdict) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = linearizable
	case "false":
		*v = notLinearizable
	case `"unknown"`:
		*v = unknownVerdict
	default:
		return fmt.Errorf("linearizable: want true, false or \"unknown\", got %s", b)
	}
	return nil
}

// The model: each seat is a register that is free or held by one customer.
// Customers are unique per request, so a holder names exactly one request.
//
// Operations on one seat (its input is a seatInput, its output a string):
//
//	book(c) -> "ok"       only if the seat is free; afterwards c holds it
//	book(c) -> "taken"    only if the seat is held (by anyone)
//	book(c) -> "unknown"  no answer or a 5xx: it may have taken effect (if the
//	                      seat was free) or not; the checker tries both
//	read    -> holder     the final seat map: who holds it ("" = free), or
//	                      anyUnconfirmed for a booking loadgen cannot name
//	preset(h)             the seat was held by h before the run
//
// Answers that say nothing about the seat (seat_busy, 400, 404, or a seat of
// a multi-seat 409 that the server did not list as taken) are left out.
// No operation frees a seat: loadgen never cancels.
const (
	opBook   = "book"
	opRead   = "read"
	opPreset = "preset"

	outOK      = "ok"
	outTaken   = "taken"
	outUnknown = "unknown"

	// anyUnconfirmed is what a read returns for a holder loadgen cannot
	// name (its owner could not be looked up, or is not one of ours). It
	// matches any holder that no 201 confirmed.
	anyUnconfirmed = "*"
)

// seatInput is the input of one operation on a seat.
type seatInput struct {
	op  string // opBook, opRead or opPreset
	who string // opBook: the customer; opPreset: the holder
}

// seatRegister is the state of one seat: who holds it, and whether a 201
// said so. It is a comparable struct, so porcupine's default == is the
// right Equal.
type seatRegister struct {
	holder    string // "" = free
	confirmed bool
}

// seatModel is the sequential specification of one seat. It is
// nondeterministic because an ambiguous booking may or may not have
// happened.
func seatModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{seatRegister{}} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(seatRegister), input.(seatInput), output.(string)
			free := s.holder == ""
			switch in.op {
			case opBook:
				switch {
				case out == outOK && free:
					return []any{seatRegister{holder: in.who, confirmed: true}}
				case out == outTaken && !free:
					return []any{s}
				case out == outUnknown && free:
					return []any{s, seatRegister{holder: in.who}}
				case out == outUnknown:
					return []any{s}
				}
			case opRead:
				if out == s.holder || (out == anyUnconfirmed && !free && !s.confirmed) {
					return []any{s}
				}
			case opPreset:
				if free {
					return []any{seatRegister{holder: in.who}}
				}
			}
			return nil
		},
		DescribeOperation: func(input, output any) string {
			in := input.(seatInput)
			return in.op + "(" + in.who + ") -> " + output.(string)
		},
	}
	return nm.ToModel()
}

// histories turns the run into one porcupine history per seat. before is
// the seat map at the start, final the seat map read at the end, owners the
// customers of bookings no 201 named.
func histories(records []record, before seatMap, final snapshot, owners map[string]string) map[string][]porcupine.Operation {
	b := &historyBuilder{
		h:          map[string][]porcupine.Operation{},
		before:     before,
		final:      final,
		owners:     owners,
		customerOf: map[string]string{},
		firstTaken: map[string]porcupine.Operation{},
	}
	for i := range records {
		if records[i].confirmed() {
			b.customerOf[records[i].booking.ID] = records[i].customer
		}
	}
	b.presets()
	for i := range records {
		r := &records[i]
		switch {
		case r.confirmed():
			b.booked(r)
		case r.ambiguous():
			b.maybeBooked(r)
		case r.status == http.StatusConflict && r.code == "seat_taken":
			b.taken(r)
		}
	}
	for key, op := range b.firstTaken {
		b.h[key] = append(b.h[key], op)
	}
	b.finalReads()
	return b.h
}

// historyBuilder collects the operations of every seat, in the steps of
// histories: what was held before the run, the answers, the final read.
type historyBuilder struct {
	h      map[string][]porcupine.Operation // seat key -> its history
	before seatMap
	final  snapshot
	owners map[string]string // booking id -> customer, for bookings no 201 named

	customerOf map[string]string              // booking id -> customer, from 201s
	firstTaken map[string]porcupine.Operation // seat key -> its earliest-answered 409
}

func (b *historyBuilder) add(key string, in seatInput, out string, call, ret int64) {
	b.h[key] = append(b.h[key], porcupine.Operation{Input: in, Output: out, Call: call, Return: ret})
}

// finalHolder is what the final read of a seat returns in the model.
func (b *historyBuilder) finalHolder(key string) string {
	id := b.final.seats[key]
	switch {
	case id == "":
		return ""
	case b.customerOf[id] != "":
		return b.customerOf[id]
	case b.before[key] == id:
		return "booking:" + id
	case b.owners[id] != "":
		return b.owners[id]
	}
	return anyUnconfirmed
}

// presets adds the bookings held before the run, which happened before
// anything loadgen did.
func (b *historyBuilder) presets() {
	for key, id := range b.before {
		if id != "" {
			b.add(key, seatInput{op: opPreset, who: "booking:" + id}, "", -2, -1)
		}
	}
}

// booked adds a 201: every seat of the booking was free and is now held.
func (b *historyBuilder) booked(r *record) {
	for _, seat := range r.bookedSeats() {
		b.add(seatKey(r.screening, seat), seatInput{opBook, r.customer}, outOK, int64(r.sent), int64(r.done))
	}
}

// maybeBooked adds a request that got no answer or a 5xx. It may take
// effect at any moment after it was sent, even after loadgen gave up on
// it: it never returns.
//
// Each such operation doubles the orders porcupine may have to try, so the
// ones that cannot matter are left out. A seat, once held, is held for good
// (nothing in the model frees it), so an ambiguous booking that took effect
// before the final read is the holder that read sees. If that read names
// someone else, the booking either did nothing or took effect after the
// read, where nothing observes it: in both cases the history is
// linearizable with it exactly when it is without.
func (b *historyBuilder) maybeBooked(r *record) {
	for _, seat := range r.seats {
		key := seatKey(r.screening, seat)
		if holder := b.finalHolder(key); holder == r.customer || holder == anyUnconfirmed {
			b.add(key, seatInput{opBook, r.customer}, outUnknown, int64(r.sent), math.MaxInt64)
		}
	}
}

// taken notes a 409 seat_taken for the seats it is about: a single-seat
// 409 is about that seat, a multi-seat one only about the seats it lists.
//
// Only the 409 that answered first is kept per seat. A 409 holds if the
// seat was held by the time it answered, and a held seat stays held: once
// the first 409 holds, every later-answering one holds too. Thousands of
// concurrent 409s on a hot seat would otherwise give porcupine an
// exponential number of orders to rule out when the history is not
// linearizable.
func (b *historyBuilder) taken(r *record) {
	for _, seat := range r.seats {
		if !(len(r.seats) == 1 || slices.Contains(r.taken, seat)) {
			continue
		}
		key := seatKey(r.screening, seat)
		if t, ok := b.firstTaken[key]; !ok || int64(r.done) < t.Return {
			b.firstTaken[key] = porcupine.Operation{Input: seatInput{opBook, r.customer}, Output: outTaken, Call: int64(r.sent), Return: int64(r.done)}
		}
	}
}

// finalReads adds the final read of every seat that was touched or is
// booked. A touched seat missing from the map reads as free.
func (b *historyBuilder) finalReads() {
	read := map[string]bool{}
	for key := range b.h {
		read[key] = true
	}
	for key, id := range b.final.seats {
		if id != "" {
			read[key] = true
		}
	}
	for key := range read {
		b.add(key, seatInput{op: opRead}, b.finalHolder(key), int64(b.final.call), int64(b.final.done))
	}
}

// linearizability is the outcome of the check.
type linearizability struct {
	verdict verdict
	// seats are the seats (screening/seat) whose history no sequential
	// order explains, sorted; at most maxReportedSeats.
	seats []string
}

const maxReportedSeats = 20

// checkLinearizable runs porcupine on every seat's history within budget
// overall (see checkSeats). A seat found illegal makes the verdict false
// even if others ran out of time; otherwise running out of time makes it
// unknown. Checking is NP-hard in general, which is why it is bounded;
// with one register per seat it is usually fast.
func checkLinearizable(h map[string][]porcupine.Operation, budget time.Duration) linearizability {
	keys, results := checkSeats(seatModel(), h, budget)
	res := linearizability{verdict: verdictOf(results)}
	for i, r := range results {
		if r == porcupine.Illegal && len(res.seats) < maxReportedSeats {
			res.seats = append(res.seats, keys[i])
		}
	}
	return res
}

// checkSeats runs porcupine on the history of every seat, a seat on each
// core at a time, within budget overall, and returns the seats' keys
// sorted and each one's result. A seat not reached within budget is
// Unknown, and so is one whose own check ran out of the time left.
func checkSeats(model porcupine.Model, h map[string][]porcupine.Operation, budget time.Duration) ([]string, []porcupine.CheckResult) {
	keys := sortedKeys(h)
	results := make([]porcupine.CheckResult, len(keys))
	for i := range results {
		results[i] = porcupine.Unknown
	}
	deadline := time.Now().Add(budget)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(keys)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(keys); i = int(next.Add(1) - 1) {
				left := time.Until(deadline)
				if left <= 0 {
					return // a zero timeout would mean "no limit" to porcupine
				}
				results[i] = porcupine.CheckOperationsTimeout(model, h[keys[i]], left)
			}
		})
	}
	wg.Wait()
	return keys, results
}

// verdictOf folds the seats' results: false if any is illegal, else
// unknown if any is unknown, else true.
func verdictOf(results []porcupine.CheckResult) verdict {
	switch {
	case slices.Contains(results, porcupine.Illegal):
		return notLinearizable
	case slices.Contains(results, porcupine.Unknown):
		return unknownVerdict
	}
	return linearizable
}
