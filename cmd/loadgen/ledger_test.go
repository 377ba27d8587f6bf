package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeLedger answers the ledger's reads from a script: the i-th read of
// the provider's stats returns stats[min(i, len-1)], and the bookings are
// always confirmed.
type fakeLedger struct {
	stats     []providerStats
	confirmed int
	read      int // how many times stats were read
}

func (f *fakeLedger) reads() ledgerReads {
	return ledgerReads{
		stats: func(context.Context) (providerStats, error) {
			s := f.stats[min(f.read, len(f.stats)-1)]
			f.read++
			return s, nil
		},
		confirmed: func(context.Context) (int, error) { return f.confirmed, nil },
	}
}

func voids(n int64) *int64 { return &n }

func TestSettleLedger(t *testing.T) {
	before := providerStats{Charges: 1000, Refunds: 100, Voids: voids(5)}
	at := func(charges, refunds int64) providerStats {
		return providerStats{Charges: before.Charges + charges, Refunds: before.Refunds + refunds, Voids: voids(7)}
	}
	for _, tc := range []struct {
		name      string
		stats     []providerStats
		confirmed int
		wait      time.Duration
		ok        bool
		reads     int    // the reads it took; 0 = 2 to 4 (it waited, and gave up)
		ledger    string // the start of the sentence
	}{
		{"balanced at once", []providerStats{at(113, 7)}, 106, time.Minute, true, 1,
			"charges 113 − refunds 7 = 106, confirmed bookings 106: balanced"},
		{"settled by the reconciler within the wait", []providerStats{at(120, 7), at(120, 9), at(120, 14)}, 106, time.Minute, true, 3,
			"charges 120 − refunds 14 = 106, confirmed bookings 106: balanced (after waiting "},
		// Reads 100, 300 and 700 ms after the first; the next would be
		// past the wait.
		{"charges nobody booked or refunded", []providerStats{at(120, 7)}, 110, time.Second, false, 0,
			"charges 120 − refunds 7 = 113, confirmed bookings 110: 3 charges nobody booked or refunded (after waiting "},
		{"a booking without a charge", []providerStats{at(109, 0)}, 110, 0, false, 1,
			"charges 109 − refunds 0 = 109, confirmed bookings 110: 1 confirmed booking without a charge"},
		{"not charging: not waited for", []providerStats{at(0, 0)}, 110, time.Minute, false, 1,
			"charges 0 − refunds 0 = 0, confirmed bookings 110: the APIs are not charging through this provider (is PAYMENT_URL set on them?)"},
		{"nothing booked, nothing charged", []providerStats{at(0, 0)}, 0, time.Minute, true, 1,
			"charges 0 − refunds 0 = 0, confirmed bookings 0: balanced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeLedger{stats: tc.stats, confirmed: tc.confirmed}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			p, err := settleLedger(ctx, f.reads(), before, tc.wait)
			if err != nil {
				t.Fatal(err)
			}
			if p.LedgerOK != tc.ok || !strings.HasPrefix(p.Ledger, tc.ledger) {
				t.Errorf("ledger ok %v: %q\nwant ok %v: %q...", p.LedgerOK, p.Ledger, tc.ok, tc.ledger)
			}
			if (tc.reads > 0 && f.read != tc.reads) || (tc.reads == 0 && (f.read < 2 || f.read > 4)) {
				t.Errorf("read the provider %d times, want %d (0: 2 to 4)", f.read, tc.reads)
			}
			if p.Voids == nil || *p.Voids != 2 {
				t.Errorf("voids %v, want the run's 2", p.Voids)
			}
		})
	}
	t.Run("a provider that cannot be read is an error", func(t *testing.T) {
		reads := ledgerReads{
			stats:     func(context.Context) (providerStats, error) { return providerStats{}, errors.New("refused") },
			confirmed: func(context.Context) (int, error) { return 0, nil },
		}
		if _, err := settleLedger(context.Background(), reads, before, time.Second); err == nil || !strings.Contains(err.Error(), "payment provider") {
			t.Errorf("err = %v, want one naming the payment provider", err)
		}
	})
}

// The ledger against the fake API and a real in-memory provider: a run
// whose charges match its bookings balances; one charge too many per ten
// bookings fails the run, exit status 1, with the difference; an API that
// does not charge at all is named as such, at once.
func TestLedgerEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		api      func(*fakeAPI)
		scenario string
		code     int
		want     string // in stdout for 0, in stderr for 1
	}{
		{"balanced", func(*fakeAPI) {}, "spread", 0, "ledger               charges 40 − refunds 0 = 40, confirmed bookings 40: balanced"},
		{"a charge nobody booked", func(f *fakeAPI) { f.chargeTwice = 10 }, "spread", 1,
			"LEDGER OFF (charges 44 − refunds 0 = 44, confirmed bookings 40: 4 charges nobody booked or refunded (after waiting "},
		{"the ledger covers hold", func(f *fakeAPI) { f.chargeTwice = 2 }, "hold", 1, "charges nobody booked or refunded"},
		{"the ledger covers best", func(f *fakeAPI) { f.chargeTwice = 2 }, "best", 1, "charges nobody booked or refunded"},
		{"not charging", func(f *fakeAPI) { f.charges = nil }, "spread", 1,
			"NOT CHARGED (40 confirmed bookings: the APIs are not charging through this provider; is PAYMENT_URL set on them?)"},
		{"hold not charging", func(f *fakeAPI) { f.charges = nil }, "hold", 1, "do they charge when a hold is confirmed?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pay, charges := newProvider(t)
			f := &fakeAPI{charges: charges}
			tc.api(f)
			url := newFakeAPI(t, f)
			args := []string{"-targets", url, "-scenario", tc.scenario, "-clients", "4", "-requests", "40",
				"-screening", smallScreening(t, url, 4, 25, time.Second), "-payments", pay, "-settle-wait", "500ms"}
			if tc.scenario == scenarioHold {
				args = append(args, "-abandon", "0")
			}
			code, stdout, stderr := runLoadgen(t, nil, args...)
			out := stdout
			if tc.code != 0 {
				out = stderr
			}
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q in\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

// The text report explains 0 charges beside overlaps: the overlapping
// payments were begun and given up, not made.
func TestOverlapsWithoutCharges(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    paymentCounts
		note bool
	}{
		{"given up", paymentCounts{Overlaps: 4, LedgerOK: true, Ledger: "balanced"}, true},
		{"charged", paymentCounts{Charges: 3, Overlaps: 4, LedgerOK: true, Ledger: "balanced"}, false},
		{"not charging is said apart", paymentCounts{Overlaps: 4, NotCharging: true, Ledger: "not charging"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if err := writeText(&b, &report{Scenario: scenarioHot, Payments: &tc.p}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "none was charged: every one was given up"); got != tc.note {
				t.Errorf("note shown %v, want %v:\n%s", got, tc.note, b.String())
			}
		})
	}
}
