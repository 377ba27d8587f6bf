package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/testenv"
)

// What each strategy buys, measured on the side effect it protects: two
// API instances on one Redis and one Postgres charge through a real
// payment provider process, and compare runs every strategy. The fenced
// write keeps every safe strategy's seat map right, so the seat map alone
// cannot tell a lock that works from none at all; the provider can. With
// no lock, and with a per-process lock across two processes, two holders of
// one seat pay at once (overlaps) and the loser is refunded; every strategy
// that promises mutual exclusion across instances shows no overlap. The
// global lock is per process: it is checked again on one instance alone.
func TestOverlapsByStrategy(t *testing.T) {
	bin := buildAPI(t)
	redlock := make([]string, 3)
	for i := range redlock {
		redlock[i] = "redis://" + testenv.StartRedisServer(t, nil).Addr + "/0"
	}
	zk, zkErr := zktest.Start()
	zkAddr := zktest.Addr(t, zk, zkErr)
	t.Cleanup(zk.Stop)
	provider := startProvider(t)
	env := []string{
		"DATABASE_URL=" + testenv.NewDatabase(t),
		"REDIS_URL=" + testenv.RedisURL(t),
		"DEMO_MODE=true",
		"PAYMENT_URL=" + provider,
		"REDLOCK_URLS=" + strings.Join(redlock, ","),
		"ZOOKEEPER_SERVERS=" + zkAddr,
		"LOCK_DIR=" + t.TempDir(),
	}
	one := startAPI(t, bin, env)
	two := one + "," + startAPI(t, bin, env)

	// Four hot seats, sixteen clients, a payment of 30 ms: every client
	// starts on a hot seat at once, so a lock that does not exclude across
	// the two instances lets two of them pay for one seat.
	load := []string{"-scenario", "hot", "-seats", "4", "-clients", "16", "-requests", "160", "-payment-delay", "30ms", "-payments", provider}

	// One compare checks every strategy: the ledger, the seat map, and no
	// overlap for the ones that promise mutual exclusion across instances.
	overlapping := map[string]bool{"none/off": false, "none/fence": false, "keyed/off": false, "keyed/fence": false, "global/fence": false}
	for _, r := range compareJSON(t, append([]string{"-targets", two}, load...)...) {
		name := r.Strategy + "/" + r.Guard
		if r.Refused != "" {
			t.Fatalf("%s refused: %s", name, r.Refused)
		}
		checkPayments(t, name, r)
		if _, unsafe := overlapping[name]; unsafe {
			overlapping[name] = r.Payments.Overlaps > 0
		} else if r.Payments.Overlaps != 0 {
			t.Errorf("%s: %d overlapping charges across two instances, want 0: its lock let two holders in", name, r.Payments.Overlaps)
		}
	}

	// The unsafe ones race by chance over four seats: on a busy machine
	// both instances can happen to pay for different seats at every
	// moment. One seat and a longer payment leave no such chance: each
	// instance's first request for the seat pays, and the two payments
	// overlap unless one instance's request arrives 100 ms after the
	// other's. Three such runs without an overlap mean the race is gone.
	race := []string{"-scenario", "hot", "-seats", "1", "-clients", "16", "-requests", "64", "-payment-delay", "100ms", "-payments", provider}
	for name, seen := range overlapping {
		lock, guard, _ := strings.Cut(name, "/")
		for attempt := 1; !seen && attempt <= 3; attempt++ {
			// The run fails on its overlaps, which is what is looked for.
			r, _ := runJSON(t, append([]string{"-targets", two, "-lock", lock, "-guard", guard}, race...)...)
			checkPayments(t, name+" on one seat", *r)
			seen = r.Payments.Overlaps > 0
		}
		if !seen {
			t.Errorf("%s: no overlapping charge across two instances, in a compare and in 3 runs on one seat; its race is expected to show", name)
		}
	}

	t.Run("global on one instance", func(t *testing.T) {
		rep, err := runJSON(t, append([]string{"-targets", one, "-lock", "global"}, load...)...)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Payments == nil || rep.Payments.Overlaps != 0 || rep.Payments.Charges != int64(rep.Succeeded) {
			t.Errorf("payments %+v with %d confirmed; want no overlap and one charge per booking", rep.Payments, rep.Succeeded)
		}
	})
}

// checkPayments checks what every run with -payments must show at a quiet
// moment, whatever its lock: a timeline that adds up to the run, every
// charge a confirmed booking or refunded, and with the fenced write a
// balanced ledger and a right seat map.
func checkPayments(t *testing.T, name string, r report) {
	t.Helper()
	p := r.Payments
	if p == nil {
		t.Fatalf("%s: the report has no payments", name)
	}
	// The timeline's overlaps, polled during the run, add up to the run's.
	if sum := timelineOverlaps(t, r.Timeline); sum != p.Overlaps {
		t.Errorf("%s: the timeline has %d overlaps, the run %d", name, sum, p.Overlaps)
	}
	if got := p.Charges - p.Refunds; got != int64(r.Succeeded) {
		t.Errorf("%s: %d charges - %d refunds = %d, but %d bookings were confirmed", name, p.Charges, p.Refunds, got, r.Succeeded)
	}
	if r.Guard == "fence" && (!p.LedgerOK || p.Confirmed != r.Succeeded) {
		t.Errorf("%s: ledger %q (ok %v); want it balanced on the %d confirmed bookings", name, p.Ledger, p.LedgerOK, r.Succeeded)
	}
	if r.Guard == "fence" && (r.DoubleBookedSeats != 0 || r.LostBookings != 0) {
		t.Errorf("%s: %d double-booked, %d lost; the fenced write must keep the seat map right", name, r.DoubleBookedSeats, r.LostBookings)
	}
}

// timelineOverlaps adds up the overlaps of a timeline's buckets.
func timelineOverlaps(t *testing.T, tl *timeline) int64 {
	t.Helper()
	if tl == nil || len(tl.Buckets) == 0 {
		t.Fatal("the report has no timeline")
	}
	var sum int64
	for _, b := range tl.Buckets {
		if b.Overlaps == nil {
			t.Fatal("a timeline of a run with -payments has no overlaps")
		}
		sum += *b.Overlaps
	}
	return sum
}

// compareJSON runs loadgen compare with -json and returns its results.
func compareJSON(t *testing.T, args ...string) []report {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := run(ctx, append([]string{"compare", "-json"}, args...), func(string) string { return "" }, &out, &errOut)
	var rep struct{ Results []report }
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil || len(rep.Results) == 0 {
		t.Fatalf("compare: %v; report (%v): %s\nstderr: %s", err, jerr, out.String(), errOut.String())
	}
	return rep.Results
}

var providerAddr = regexp.MustCompile(`provider on (http://[0-9.:]+)`)

// startProvider starts `loadgen payments` as a process of its own, built
// from this tree, and returns its base URL.
func startProvider(t *testing.T) string {
	t.Helper()
	return startProcess(t, exec.Command(buildBinary(t, "loadgen"), "payments", "-addr", "127.0.0.1:0"), providerAddr)
}
