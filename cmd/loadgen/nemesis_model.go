package main

import (
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The nemesis checks each seat as a register that is free (""), booked by
// a customer ("b:alice") or held by one ("h:alice"). Customers are unique
// per operation (a retry reuses its first send's), so a holder names the
// request that made it. The operations on a seat:
//
//	book(c)    ok: "" -> b:c (b:c stays: a retry's repeat); taken: not free
//	hold(c)    ok: "" -> h:c; taken: not free
//	confirm(c) ok: h:c -> b:c (b:c stays: a repeat)
//	release(c) ok: h:c -> ""
//	cancel(c)  ok: b:c -> "" (anything else stays: a cancel of a
//	           booking already cancelled answers 204 too)
//	read       the final seat map: "", b:c, or b:* / h:* for a holder the
//	           map does not name
//
// An unknown outcome may or may not have taken effect, at any moment after
// its invocation: the checker tries both. A failure that is not a refusal
// because of the seat (a 400, seat_busy, lock_lost) changed nothing and
// says nothing about the seat, so it is left out.
type nemInput struct {
	op  string // a kind of histOp, or "read"
	who string
}

// nemOutput is what an operation returned: ok, taken, unknown, or for a
// read the holder.
type nemOutput = string

const (
	nemOK      = "ok"
	nemTaken   = "taken"
	nemUnknown = "unknown"
	nemRead    = "read"
)

// nemesisModel is the sequential specification of one seat.
func nemesisModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{""} },
		Step: func(state, input, output any) []any {
			s, in, out := state.(string), input.(nemInput), output.(nemOutput)
			if in.op == nemRead {
				if out == s || (strings.HasSuffix(out, ":*") && strings.HasPrefix(s, out[:2])) {
					return []any{s}
				}
				return nil
			}
			if out == nemTaken {
				if s != "" {
					return []any{s}
				}
				return nil
			}
			next, legal := nemStep(s, in)
			switch {
			case out == nemUnknown && legal:
				return []any{s, next}
			case out == nemUnknown:
				return []any{s}
			case legal:
				return []any{next}
			}
			return nil
		},
		DescribeOperation: func(input, output any) string {
			in := input.(nemInput)
			return in.op + "(" + in.who + ") -> " + output.(nemOutput)
		},
		DescribeState: func(state any) string {
			if state.(string) == "" {
				return "free"
			}
			return state.(string)
		},
	}
	return nm.ToModel()
}

// nemStep is what a successful operation does to a seat in state s, and
// whether it may succeed there at all.
func nemStep(s string, in nemInput) (string, bool) {
	booked, held := "b:"+in.who, "h:"+in.who
	switch in.op {
	case kindBook, kindRetry, kindGiveUp:
		return booked, s == "" || s == booked
	case kindHold:
		return held, s == ""
	case kindConfirm:
		return booked, s == held || s == booked
	case kindRelease:
		return "", s == held
	case kindCancel:
		if s != booked {
			return s, true
		}
		return "", true
	}
	return s, false
}

// seatOps turns a history into one porcupine history per seat
// (screening/seat), with the final read of every seat at read (its
// invocation and completion, in the history's nanoseconds). final holds
// the register value of every seat the final maps show taken.
func seatOps(ops []histOp, final map[string]string, readCall, readDone int64) map[string][]porcupine.Operation {
	h := map[string][]porcupine.Operation{}
	for _, op := range ops {
		out, ok := seatOutcome(op)
		if !ok {
			continue
		}
		ret := op.DoneNS
		if out == nemUnknown {
			ret = math.MaxInt64 // it may take effect whenever
		}
		for _, seat := range op.Seats {
			if out == nemTaken && len(op.Seats) > 1 && !slices.Contains(op.Taken, seat) {
				continue // a multi-seat refusal is about the seats it lists
			}
			key := seatKey(op.Screening, seat)
			if out == nemUnknown && !mayShow(op, final[key]) {
				continue
			}
			h[key] = append(h[key], porcupine.Operation{ClientId: op.Client, Input: nemInput{op.Kind, op.Customer}, Output: out, Call: op.InvokeNS, Return: ret})
		}
	}
	for key := range final {
		if _, ok := h[key]; !ok {
			h[key] = nil
		}
	}
	for key := range h {
		h[key] = append(h[key], porcupine.Operation{ClientId: -1, Input: nemInput{op: nemRead}, Output: final[key], Call: readCall, Return: readDone})
	}
	return h
}

// seatOutcome is what op returned, in the model's terms, and false for an
// operation that says nothing about its seats.
func seatOutcome(op histOp) (nemOutput, bool) {
	switch {
	case op.Outcome == outcomeOK:
		return nemOK, true
	case op.Outcome == outcomeUnknown:
		return nemUnknown, true
	case op.Status == http.StatusConflict && (op.Code == "seat_taken" || op.Code == "seat_held") && (op.Kind == kindBook || op.Kind == kindRetry || op.Kind == kindGiveUp || op.Kind == kindHold):
		return nemTaken, true
	}
	return "", false
}

// mayShow reports whether an operation of unknown outcome can matter to a
// seat that the final read finds in state final. A booking or hold of
// unknown outcome is never undone by anybody (nobody has its token), so
// if it took effect before the read, the read shows its customer (or a
// holder it cannot name); otherwise it is invisible either way and can be
// left out, which keeps porcupine's search small. A send under an
// Idempotency-Key is the exception: its retry's answer may have given the
// client the token, and a cancel, of the same booking.
func mayShow(op histOp, final string) bool {
	if op.Key != "" {
		return true
	}
	switch op.Kind {
	case kindBook, kindRetry, kindGiveUp:
		return final == "b:"+op.Customer || final == "b:*"
	case kindHold:
		return final == "h:*"
	}
	return true
}
