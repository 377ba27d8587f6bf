package main

import (
	"fmt"
	"strings"
)

// The verdict of a run names every harm it saw, not only the data's: a
// run whose seat map is right but whose customers were charged twice for
// one seat (overlaps), charged and refunded, or answered with errors is
// not clean, and says so. Some harms fail the run by themselves (exit
// status 1): a double-booked seat, a lost booking, a booking made against
// a refusal, the violations of holds. The others are named and fail the
// run only when a threshold says so (thresholds.go).

// Results of a run, in the report's "result" field.
const (
	resultClean       = "CLEAN"        // no harm of any kind
	resultHarmed      = "HARMED"       // harm seen, none that fails the run
	resultFailed      = "FAILED"       // a harm that fails the run, or a threshold crossed
	resultNotVerified = "NOT VERIFIED" // healthz: nothing booked, nothing to verify
)

// harm is one kind of damage a run showed, and how much of it.
type harm struct {
	// Figure is the report's field that counts it (double_booked_seats,
	// overlaps, ...).
	Figure string `json:"figure"`
	Count  int64  `json:"count"`
	// Fails is true when this harm fails the run by itself (exit status
	// 1), or crossed a threshold.
	Fails bool `json:"fails"`
}

// harmKind says how a figure is named in the verdict line.
type harmKind struct {
	figure, label, unit string
	fails               bool // fails the run whatever the thresholds
}

// harmKinds are every harm a run can show, in the order the verdict
// names them.
var harmKinds = []harmKind{
	{"double_booked_seats", "DOUBLE-BOOKED", "seat", true},
	{"lost_bookings", "LOST", "booking", true},
	{"phantom_seats_contradicted", "BOOKED AGAINST A REFUSAL", "seat", true},
	{"confirmed_after_expiry", "CONFIRMED AFTER EXPIRY", "confirm", true},
	{"abandoned_seats_not_freed", "ABANDONED NOT FREED", "seat", true},
	{"sold_out_with_free_seats", "SOLD OUT WITH FREE SEATS", "seat", true},
	{"over_capacity", "CONFIRMED OVER CAPACITY", "seat", true},
	{"stranded_avoidable", "STRANDED AVOIDABLY", "seat", true},
	{"ledger_diff", "LEDGER OFF", "charge", true},
	{"not_charged", "NOT CHARGED", "confirmed booking", true},
	{"overlaps", "OVERLAPS", "charge", false},
	{"refunds", "REFUNDS", "charge", false},
	{"refused_stale", "REFUSED STALE", "charge", false},
	{"errors", "ERRORS", "request", false},
	{"confirm_errors", "CONFIRM ERRORS", "confirm", false},
	{"fifo_inversions", "FIFO INVERSIONS", "buyer", false},
	{"non_linearizable_seats", "NOT LINEARIZABLE", "seat", false},
}

// figures are the counts of every harm figure of the report.
func (r *report) figures() map[string]int64 {
	f := map[string]int64{
		"double_booked_seats":        int64(r.DoubleBookedSeats),
		"lost_bookings":              int64(r.LostBookings),
		"phantom_seats_contradicted": int64(r.PhantomSeatsContradicted),
		"errors":                     int64(r.Errors),
		"non_linearizable_seats":     int64(len(r.NonLinearizableSeats)),
	}
	if h := r.Holds; h != nil {
		f["confirmed_after_expiry"] = int64(h.ConfirmedAfterExpiry)
		f["abandoned_seats_not_freed"] = int64(h.AbandonedSeatsNotFreed)
		f["sold_out_with_free_seats"] = int64(h.SoldOutWithFreeSeats)
		f["confirm_errors"] = int64(h.ConfirmErrors)
	}
	if o := r.OnSale; o != nil {
		f["over_capacity"] = int64(o.OverCapacity)
		f["stranded_avoidable"] = int64(o.StrandedAvoidable)
		f["fifo_inversions"] = int64(o.FIFOInversions)
	}
	if p := r.Payments; p != nil {
		f["overlaps"], f["refunds"], f["refused_stale"] = p.Overlaps, p.Refunds, p.RefusedStale
		if p.NotCharging {
			f["not_charged"] = int64(p.Confirmed)
		} else {
			f["ledger_diff"] = max(p.LedgerDiff, -p.LedgerDiff)
		}
	}
	return f
}

// harms lists the harms the run showed, in the order of harmKinds.
func (r *report) harms() []harm {
	if r.Refused != "" {
		return nil
	}
	figures := r.figures()
	var out []harm
	for _, k := range harmKinds {
		if n := figures[k.figure]; n > 0 {
			_, crossed := r.crossed(k.figure)
			out = append(out, harm{Figure: k.figure, Count: n, Fails: k.fails || crossed})
		}
	}
	return out
}

// judge fills in the report's verdict: the thresholds of specs measured
// on it, its result, its harms and what clean means for it.
func (r *report) judge(specs []thresholdSpec) {
	r.Thresholds = evaluate(specs, r)
	r.Harms = r.harms()
	r.Result = r.result()
	r.CleanMeans = r.cleanMeans()
}

// result is the report's result: one of the result constants, or ""
// for a strategy the server refused, which did not run.
func (r *report) result() string {
	switch {
	case r.Refused != "":
		return ""
	case r.failed():
		return resultFailed
	case r.Scenario == scenarioHealthz:
		return resultNotVerified
	case len(r.harms()) > 0:
		return resultHarmed
	}
	return resultClean
}

// failed reports whether the run failed (exit status 1): a harm that
// fails by itself, or a threshold crossed.
func (r *report) failed() bool {
	failing, _ := r.items()
	return len(failing) > 0
}

// items names what the verdict lists: every harm, with the threshold it
// crossed if it did, and the thresholds crossed on figures that are not
// harms (latency, throughput). failing are those that fail the run.
func (r *report) items() (failing, other []string) {
	for _, h := range r.harms() {
		s := r.describe(h)
		if t, ok := r.crossed(h.Figure); ok {
			s = strings.TrimSuffix(s, ")") + ", " + t.crossing() + ")"
		}
		if h.Fails {
			failing = append(failing, s)
		} else {
			other = append(other, s)
		}
	}
	for _, t := range r.Thresholds {
		if !t.Passed && !isHarm(t.Figure) {
			failing = append(failing, fmt.Sprintf("%s (%s, %s)", t.kind.label, t.measured(), t.crossing()))
		}
	}
	return failing, other
}

// isHarm reports whether figure counts a harm.
func isHarm(figure string) bool {
	for _, k := range harmKinds {
		if k.figure == figure {
			return true
		}
	}
	return false
}

// verdict is the report's conclusion in one line: its result and every
// harm, those that fail the run first.
func (r *report) verdict() string {
	failing, other := r.items()
	if r.Refused != "" {
		return "REFUSED: " + r.Refused
	}
	head := r.result()
	if r.Scenario == scenarioHealthz {
		head = resultNotVerified + ": healthz books nothing"
		if len(failing) > 0 {
			head = resultFailed
		}
	}
	switch {
	case len(failing) > 0 && len(other) > 0:
		return head + ": " + strings.Join(failing, ", ") + "; also " + strings.Join(other, ", ")
	case len(failing) > 0:
		return head + ": " + strings.Join(failing, ", ")
	case len(other) > 0 && r.Scenario == scenarioHealthz:
		return head + "; also " + strings.Join(other, ", ")
	case len(other) > 0:
		return head + ": " + strings.Join(other, ", ")
	}
	return head
}

// verdictLine is the verdict of a single run with its exit status, which
// a clean run leaves out.
func (r *report) verdictLine() string {
	v := r.verdict()
	switch {
	case r.failed():
		return v + "; exit status 1"
	case r.result() != resultClean && r.Refused == "":
		return v + "; exit status 0"
	}
	return v
}

// failures names what made the run fail, with how much of it.
func (r *report) failures() []string {
	failing, _ := r.items()
	return failing
}

// describe names a harm of r as the verdict line does, the ledger's with
// its sums.
func (r *report) describe(h harm) string {
	switch p := r.Payments; {
	case h.Figure == "ledger_diff" && p.Ledger != "":
		return "LEDGER OFF (" + p.Ledger + ")"
	case h.Figure == "not_charged":
		why := "is PAYMENT_URL set on them?"
		if r.Scenario == scenarioHold || r.Scenario == scenarioOnSale {
			why = "is PAYMENT_URL set on them, and do they charge when a hold is confirmed?"
		}
		return fmt.Sprintf("NOT CHARGED (%s: the APIs are not charging through this provider; %s)", plural(h.Count, "confirmed booking"), why)
	}
	return h.String()
}

// String names the harm as the verdict line does: "OVERLAPS (8 charges)".
func (h harm) String() string {
	for _, k := range harmKinds {
		if k.figure == h.Figure {
			return fmt.Sprintf("%s (%s)", k.label, plural(h.Count, k.unit))
		}
	}
	return fmt.Sprintf("%s (%d)", h.Figure, h.Count)
}

// cleanMeans says what a clean result would have needed of this run.
func (r *report) cleanMeans() string {
	if r.Scenario == scenarioHealthz {
		if len(r.Thresholds) > 0 {
			return "no error, and every threshold met"
		}
		return "no error"
	}
	s := "no seat double-booked, no booking lost or booked against a refusal, no error, and a linearizable history"
	switch {
	case r.Scenario == scenarioHold:
		s += "; no confirm after its hold expired, no confirm error, and every abandoned hold's seats freed"
	case r.Scenario == scenarioBest:
		s += "; no sold out while seats were free"
	case r.Scenario == scenarioOnSale:
		s += "; no confirm after its hold expired, no confirm error, every abandoned hold's seats freed, no more seats confirmed than the screening has, no single seat left alone by a request that had a choice that left none"
		if r.OnSale != nil && r.OnSale.QueueAdmitPerS > 0 {
			s += ", and no buyer admitted before one who joined the queue earlier"
		}
	}
	if r.Payments != nil {
		s += "; no overlapping charge, no refund and no stale charge refused, and charges − refunds = confirmed bookings"
	}
	if len(r.Thresholds) > 0 {
		s += "; and every threshold met"
	}
	return s
}

// plural is "1 seat", "2 seats", "2 strategies".
func plural[N int | int64](n N, noun string) string {
	switch {
	case n == 1:
		return "1 " + noun
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
