package main

import (
	"strings"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestTicketingAgainstRealAPI runs the best and hold scenarios against two
// instances of cmd/api on one Redis and one Postgres: both must come out
// clean, best must end sold out with no seat left free, and hold must see
// payers slower than their holds refused, and abandoned holds expire.
func TestTicketingAgainstRealAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the API; skipped with -short")
	}
	env := []string{"DATABASE_URL=" + testenv.NewDatabase(t), "REDIS_URL=" + testenv.RedisURL(t)}
	bin := buildAPI(t)
	targets := strings.Join([]string{startAPI(t, bin, env), startAPI(t, bin, env)}, ",")

	t.Run("best sells out and leaves no seat free", func(t *testing.T) {
		const clients = 32
		rep, err := runJSON(t, "-targets", targets, "-scenario", "best", "-clients", "32", "-requests", "5000")
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		h := rep.Holds
		if h == nil || h.SoldOutSingles != clients || h.SoldOutWithFreeSeats != 0 {
			t.Fatalf("holds figures %+v: want every one of %d clients refused a single seat, with no seat free", h, clients)
		}
		if rep.Succeeded == 0 || rep.DoubleBookedSeats != 0 || rep.LostBookings != 0 || rep.PhantomSeatsContradicted != 0 {
			t.Errorf("succeeded %d, double-booked %d, lost %d, contradicted %d", rep.Succeeded, rep.DoubleBookedSeats, rep.LostBookings, rep.PhantomSeatsContradicted)
		}
	})

	t.Run("hold confirms in time, refuses late payers, and frees abandoned seats", func(t *testing.T) {
		rep, err := runJSON(t, "-targets", targets, "-scenario", "hold", "-clients", "16", "-requests", "160",
			"-payment-delay", "1s", "-hold-ttl", "1s", "-abandon", "0.3")
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		h := rep.Holds
		if h == nil || h.Held == 0 || h.Confirmed == 0 || h.Abandoned == 0 || h.ExpiredBeforeConfirm == 0 {
			t.Fatalf("holds figures %+v: want holds confirmed, abandoned, and some too late", h)
		}
		if !h.AbandonedChecked || h.AbandonedSeatsNotFreed != 0 || h.ConfirmedAfterExpiry != 0 {
			t.Errorf("abandoned checked %v, not freed %d, confirmed after expiry %d", h.AbandonedChecked, h.AbandonedSeatsNotFreed, h.ConfirmedAfterExpiry)
		}
		if h.Confirmed+h.ExpiredBeforeConfirm+h.ConfirmErrors+h.Abandoned != h.Held || h.ConfirmErrors != 0 {
			t.Errorf("holds figures %+v do not add up, or confirms failed", h)
		}
		if rep.DoubleBookedSeats != 0 || rep.LostBookings != 0 || rep.PhantomSeatsContradicted != 0 {
			t.Errorf("double-booked %d, lost %d, contradicted %d", rep.DoubleBookedSeats, rep.LostBookings, rep.PhantomSeatsContradicted)
		}
	})
}

// The verdict names the hold scenarios' violations like the others.
func TestVerdictNamesHoldViolations(t *testing.T) {
	rep := &report{Scenario: scenarioHold, Holds: &holdCounts{ConfirmedAfterExpiry: 1, AbandonedSeatsNotFreed: 3}}
	want := "FAILED: CONFIRMED AFTER EXPIRY (1 confirm), ABANDONED NOT FREED (3 seats); exit status 1"
	if got := rep.verdict(); got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	rep.Holds = &holdCounts{SoldOutWithFreeSeats: 2}
	if got := rep.verdict(); !strings.Contains(got, "SOLD OUT WITH FREE SEATS (2 seats)") {
		t.Errorf("verdict %q does not name the free seats of a sold-out screening", got)
	}
}
