package main

import (
	"strings"
	"testing"
)

// setHarm sets the figure of one harm kind on a report to n.
func setHarm(r *report, figure string, n int) {
	if r.Holds == nil {
		r.Holds = &holdCounts{}
	}
	if r.Payments == nil {
		r.Payments = &paymentCounts{}
	}
	if r.OnSale == nil {
		r.OnSale = &onsaleCounts{}
	}
	switch figure {
	case "double_booked_seats":
		r.DoubleBookedSeats = n
	case "lost_bookings":
		r.LostBookings = n
	case "phantom_seats_contradicted":
		r.PhantomSeatsContradicted = n
	case "confirmed_after_expiry":
		r.Holds.ConfirmedAfterExpiry = n
	case "abandoned_seats_not_freed":
		r.Holds.AbandonedSeatsNotFreed = n
	case "sold_out_with_free_seats":
		r.Holds.SoldOutWithFreeSeats = n
	case "over_capacity":
		r.OnSale.OverCapacity = n
	case "stranded_avoidable":
		r.OnSale.StrandedAvoidable = n
	case "fifo_inversions":
		r.OnSale.FIFOInversions = n
	case "overlaps":
		r.Payments.Overlaps = int64(n)
	case "refunds":
		r.Payments.Refunds = int64(n)
	case "refused_stale":
		r.Payments.RefusedStale = int64(n)
	case "errors":
		r.Errors = n
	case "confirm_errors":
		r.Holds.ConfirmErrors = n
	case "ledger_diff":
		r.Payments.Charges = int64(n)
		r.Payments.balance(0)
		r.Payments.Ledger = r.Payments.describe(0, notCharging)
	case "not_charged":
		r.Payments.balance(n)
	case "non_linearizable_seats":
		r.Linearizable = notLinearizable
		for range n {
			r.NonLinearizableSeats = append(r.NonLinearizableSeats, "s/A1")
		}
	}
}

// The verdict names every kind of harm with its count, and only the kinds
// that fail by themselves make the result FAILED; the others make it
// HARMED, never CLEAN.
func TestVerdictNamesEveryHarm(t *testing.T) {
	for _, k := range harmKinds {
		t.Run(k.figure, func(t *testing.T) {
			r := &report{Scenario: scenarioHot}
			setHarm(r, k.figure, 3)
			wantResult, wantExit := resultHarmed, "; exit status 0"
			if k.fails {
				wantResult, wantExit = resultFailed, "; exit status 1"
			}
			got := r.verdictLine()
			head, count := wantResult+": "+k.label+" (", "3 "+k.unit+"s"
			if !strings.HasPrefix(got, head) || !strings.Contains(got, count) || !strings.HasSuffix(got, wantExit) {
				t.Errorf("verdict %q, want %q, %q and %q", got, head, count, wantExit)
			}
			if r.failed() != k.fails {
				t.Errorf("failed() = %v, want %v", r.failed(), k.fails)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report *report
		want   string
	}{
		{"clean", &report{Scenario: scenarioHot}, "CLEAN"},
		{"clean with payments", &report{Scenario: scenarioMixed, Payments: &paymentCounts{Charges: 10}}, "CLEAN"},
		// A run whose seat map is right but whose customers were charged twice.
		{"overlaps and refunds are named", &report{Scenario: scenarioMixed, Payments: &paymentCounts{Charges: 120, Refunds: 16, Overlaps: 8}},
			"HARMED: OVERLAPS (8 charges), REFUNDS (16 charges); exit status 0"},
		{"failures first, then the rest", &report{Scenario: scenarioHot, counts: counts{LostBookings: 1}, Errors: 2, Payments: &paymentCounts{Overlaps: 1}},
			"FAILED: LOST (1 booking); also OVERLAPS (1 charge), ERRORS (2 requests); exit status 1"},
		{"the ledger names its sums", &report{Scenario: scenarioHot, Payments: &paymentCounts{Charges: 120, Refunds: 7, Confirmed: 110, LedgerDiff: 3,
			Ledger: "charges 120 − refunds 7 = 113, confirmed bookings 110: 3 charges nobody booked or refunded (after waiting 30s)"}},
			"FAILED: LEDGER OFF (charges 120 − refunds 7 = 113, confirmed bookings 110: 3 charges nobody booked or refunded (after waiting 30s)); also REFUNDS (7 charges); exit status 1"},
		{"an API that does not charge", &report{Scenario: scenarioHot, Payments: &paymentCounts{Confirmed: 40, NotCharging: true}},
			"FAILED: NOT CHARGED (40 confirmed bookings: the APIs are not charging through this provider; is PAYMENT_URL set on them?); exit status 1"},
		{"healthz verifies nothing", &report{Scenario: scenarioHealthz}, "NOT VERIFIED: healthz books nothing; exit status 0"},
		{"healthz names its errors", &report{Scenario: scenarioHealthz, Errors: 4}, "NOT VERIFIED: healthz books nothing; also ERRORS (4 requests); exit status 0"},
		{"a refused strategy did not run", &report{Refused: "server not in demo mode", Errors: 1}, "REFUSED: server not in demo mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.report.verdictLine(); got != tc.want {
				t.Errorf("verdict %q, want %q", got, tc.want)
			}
		})
	}
}

// What clean means is said once, and names what this run checked.
func TestCleanMeans(t *testing.T) {
	plain := (&report{Scenario: scenarioHot}).cleanMeans()
	paid := (&report{Scenario: scenarioHot, Payments: &paymentCounts{}}).cleanMeans()
	held := (&report{Scenario: scenarioHold, Holds: &holdCounts{}}).cleanMeans()
	for _, tc := range []struct {
		means, want string
		has         bool
	}{
		{plain, "no seat double-booked", true},
		{plain, "overlapping charge", false},
		{paid, "no overlapping charge, no refund", true},
		{held, "abandoned hold", true},
	} {
		if strings.Contains(tc.means, tc.want) != tc.has {
			t.Errorf("clean means %q: contains %q is %v, want %v", tc.means, tc.want, !tc.has, tc.has)
		}
	}
}
