package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"
)

// The kinds of operation in a nemesis history.
const (
	kindBook    = "book"    // POST bookings, one seat or several
	kindRetry   = "retry"   // the same Idempotency-Key and body again
	kindGiveUp  = "give-up" // a booking whose client hangs up early
	kindHold    = "hold"    // POST holds
	kindConfirm = "confirm" // POST holds/{id}/confirm
	kindRelease = "release" // DELETE holds/{id}
	kindCancel  = "cancel"  // DELETE bookings/{id}
)

// The outcomes of an operation, as Jepsen has them: ok (it took effect),
// fail (it certainly did not) and unknown (no answer, or an answer that
// does not say: a 5xx, a timeout, a client that gave up).
const (
	outcomeOK      = "ok"
	outcomeFail    = "fail"
	outcomeUnknown = "unknown"
)

// histOp is one operation: its invocation and its completion. Times are
// nanoseconds from the start of the load.
type histOp struct {
	ID        int              `json:"id"`
	Client    int              `json:"client"`
	Instance  string           `json:"instance"`
	Kind      string           `json:"kind"`
	Screening string           `json:"screening"`
	Seats     []string         `json:"seats"`
	Customer  string           `json:"customer"`
	Key       string           `json:"idempotency_key,omitempty"`
	Of        string           `json:"of,omitempty"` // the hold or booking a confirm, release or cancel acts on
	InvokeNS  int64            `json:"invoke_ns"`
	DoneNS    int64            `json:"done_ns,omitempty"`
	Status    int              `json:"status,omitempty"` // absent: no answer
	Code      string           `json:"code,omitempty"`
	Taken     []string         `json:"taken,omitempty"`
	Outcome   string           `json:"outcome,omitempty"` // absent only on an invoke line
	Booking   string           `json:"booking,omitempty"` // the booking made (201)
	Hold      string           `json:"hold,omitempty"`    // the hold made (201)
	Fences    map[string]int64 `json:"fences,omitempty"`  // of the booking's charge, as the provider saw them
	Error     string           `json:"error,omitempty"`
}

// outcomeOf classifies an answer. A 5xx says nothing about what happened
// (a 503 promises nothing was booked, and the checker tests that promise
// no further than the seat maps show), nor does no answer at all.
func outcomeOf(a answer, want int) string {
	switch {
	case a.status == want || (want == http.StatusCreated && a.status == http.StatusOK):
		return outcomeOK
	case a.status == 0 || a.status >= 500:
		return outcomeUnknown
	}
	return outcomeFail
}

// history is every operation of a run, appended by the clients.
type history struct {
	start time.Time
	mu    sync.Mutex // protects ops: every client appends
	ops   []histOp
}

// invoke returns an operation that starts now.
func (h *history) invoke(client int, instance, kind string) histOp {
	return histOp{Client: client, Instance: instance, Kind: kind, InvokeNS: int64(time.Since(h.start))}
}

// complete finishes op with answer a (want is the status of success) and
// appends it.
func (h *history) complete(op histOp, a answer, want int) histOp {
	op.DoneNS = int64(time.Since(h.start))
	op.Status, op.Code, op.Taken = a.status, a.code, a.taken
	op.Outcome = outcomeOf(a, want)
	if a.err != nil {
		op.Error = a.err.Error()
	}
	h.mu.Lock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	h.mu.Unlock()
	return op
}

// write saves the history as JSON lines: an invoke line and a completion
// line per operation, in time order, as a Jepsen history reads.
func (h *history) write(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	type line struct {
		Type string  `json:"type"` // invoke or complete
		T    float64 `json:"t_s"`
		histOp
	}
	for _, ev := range h.events() {
		l := line{Type: "complete", T: float64(ev.DoneNS) / 1e9, histOp: ev.histOp}
		if !ev.complete {
			l = line{Type: "invoke", T: float64(ev.InvokeNS) / 1e9, histOp: ev.invocation()}
		}
		if err := enc.Encode(l); err != nil {
			_ = f.Close()
			return fmt.Errorf("nemesis: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return fmt.Errorf("nemesis: %w", err)
	}
	return f.Close()
}

// invocation is what was known of op when it was sent: nothing of its
// answer.
func (op histOp) invocation() histOp {
	return histOp{ID: op.ID, Client: op.Client, Instance: op.Instance, Kind: op.Kind, Screening: op.Screening,
		Seats: op.Seats, Customer: op.Customer, Key: op.Key, Of: op.Of, InvokeNS: op.InvokeNS}
}

// event is an invocation or a completion of an operation.
type event struct {
	histOp
	complete bool
}

// events returns every invocation and completion, in time order.
func (h *history) events() []event {
	evs := make([]event, 0, 2*len(h.ops))
	for _, op := range h.ops {
		evs = append(evs, event{op, false}, event{op, true})
	}
	at := func(e event) int64 {
		if e.complete {
			return e.DoneNS
		}
		return e.InvokeNS
	}
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Compare(at(a), at(b)) })
	return evs
}
