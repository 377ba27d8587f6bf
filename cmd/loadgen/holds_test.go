package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
)

// TestTicketingAgainstRealAPI runs the best and hold scenarios against two
// instances of cmd/api on one Redis and one Postgres: both must come out
// clean, best must end sold out with no seat left free, and hold must see
// payers slower than their holds refused, and abandoned holds expire.
func TestTicketingAgainstRealAPI(t *testing.T) {
	targets := startTwoAPIs(t, buildAPI(t))

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
		if rep.Linearizable != linearizable {
			t.Errorf("linearizable %q, want true: best goes through the one verification", rep.Linearizable)
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
		if rep.Linearizable != linearizable {
			t.Errorf("linearizable %q, want true: the confirms are checked like bookings", rep.Linearizable)
		}
	})
}

// The verdict names the hold scenarios' violations like the others.
func TestVerdictNamesHoldViolations(t *testing.T) {
	rep := &report{Scenario: scenarioHold, Holds: &holdCounts{ConfirmedAfterExpiry: 1, AbandonedSeatsNotFreed: 3}}
	want := "FAILED: CONFIRMED AFTER EXPIRY (1 confirm), ABANDONED NOT FREED (3 seats); exit status 1"
	if got := rep.verdictLine(); got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
	rep.Holds = &holdCounts{SoldOutWithFreeSeats: 2}
	if got := rep.verdict(); !strings.Contains(got, "SOLD OUT WITH FREE SEATS (2 seats)") {
		t.Errorf("verdict %q does not name the free seats of a sold-out screening", got)
	}
}

// newProvider serves an in-memory payment provider and returns its base
// URL and a client of it, for a fake API to charge through.
func newProvider(t *testing.T) (string, *payment.Client) {
	t.Helper()
	srv := httptest.NewServer(payment.NewProvider(payment.ProviderOptions{}).Handler())
	t.Cleanup(srv.Close)
	c, err := payment.NewClient(srv.URL, payment.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, c
}

// smallScreening creates a screening of rows x perRow seats on the API at
// url, with holds of holdTTL.
func smallScreening(t *testing.T, url string, rows, perRow int, holdTTL time.Duration) string {
	t.Helper()
	ms := holdTTL.Milliseconds()
	c := newClient(1, 1, 5*time.Second, "")
	s, err := c.createScreening(context.Background(), url, createScreening{Movie: "small", Rows: rows, SeatsPerRow: perRow, HoldTTLMS: &ms})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// best and hold go through the one driver and verification: the
// linearizability check, -payments and -faults work for them as for every
// scenario.
func TestTicketingThroughTheOneDriver(t *testing.T) {
	t.Run("best with lost answers is linearizable", func(t *testing.T) {
		// Every third booking answers 503 although it booked: its seats,
		// which it never named, are found through their owner.
		url := newFakeAPI(t, &fakeAPI{failAfterBooking: 3})
		rep, err := runJSON(t, "-targets", url, "-scenario", "best", "-screening", smallScreening(t, url, 2, 10, time.Second), "-clients", "3")
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if rep.Ambiguous == 0 || rep.PhantomSeatsExplained == 0 || rep.Linearizable != linearizable {
			t.Errorf("ambiguous %d, explained %d, linearizable %q; want lost answers, explained, true", rep.Ambiguous, rep.PhantomSeatsExplained, rep.Linearizable)
		}
	})

	pay, charges := newProvider(t)
	url := newFakeAPI(t, &fakeAPI{charges: charges})
	faults := filepath.Join(t.TempDir(), "faults.jsonl")
	line := fmt.Sprintf(`{"name":"drill","start":%q}`+"\n", time.Now().Add(-time.Second).Format(time.RFC3339Nano))
	if err := os.WriteFile(faults, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario string
		args     []string
	}{
		{"best", nil},
		{"hold", []string{"-payment-delay", "1ms", "-abandon", "0.3"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			args := append([]string{"-targets", url, "-scenario", tc.scenario, "-screening", smallScreening(t, url, 3, 10, time.Second),
				"-clients", "4", "-requests", "60", "-payments", pay, "-faults", faults}, tc.args...)
			rep, err := runJSON(t, args...)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if rep.Linearizable != linearizable {
				t.Errorf("linearizable %q, want true", rep.Linearizable)
			}
			bookings := rep.Succeeded
			if tc.scenario == "hold" {
				bookings = rep.Holds.Confirmed
			}
			if p := rep.Payments; bookings == 0 || p == nil || p.Charges != int64(bookings) {
				t.Errorf("payments %+v for %d bookings; want one charge per booking", p, bookings)
			}
			if tl := rep.Timeline; tl == nil || len(tl.Faults) != 1 || tl.Buckets[0].Overlaps == nil {
				t.Errorf("timeline %+v; want the fault window and the overlaps", tl)
			}
		})
	}
}
