package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/seatlock/seatlock/internal/testenv"
)

func TestScheduleIsFixedBySeed(t *testing.T) {
	kinds := slices.Clone(faultKinds)
	a := makeSchedule(1, kinds, 60*time.Second, 3)
	b := makeSchedule(1, kinds, 60*time.Second, 3)
	c := makeSchedule(2, kinds, 60*time.Second, 3)
	if len(a) == 0 {
		t.Fatal("a 60 s schedule has no fault")
	}
	if scheduleHash(a) != scheduleHash(b) {
		t.Errorf("seed 1 twice: hashes %s and %s", scheduleHash(a), scheduleHash(b))
	}
	if scheduleHash(a) == scheduleHash(c) {
		t.Errorf("seeds 1 and 2 give the same schedule %v", a)
	}
	for _, f := range a {
		if f.start() < quietStart || f.end() > 60*time.Second-quietEnd || f.end() <= f.start() {
			t.Errorf("fault %+v outside the run's fault window", f)
		}
	}
	only := makeSchedule(1, []string{"pause"}, 60*time.Second, 3)
	for _, f := range only {
		if f.Kind != "pause" || !strings.HasPrefix(f.Target, "api-") {
			t.Errorf("-faults pause drew %+v", f)
		}
	}
}

func TestParseFaultKinds(t *testing.T) {
	if got, err := parseFaultKinds("all"); err != nil || len(got) != len(faultKinds) {
		t.Errorf("all: %v, %v", got, err)
	}
	if got, err := parseFaultKinds("kill, pause,kill"); err != nil || !slices.Equal(got, []string{"kill", "pause"}) {
		t.Errorf("kill, pause,kill: %v, %v", got, err)
	}
	if _, err := parseFaultKinds("kill,meteor"); err == nil {
		t.Error("an unknown fault was accepted")
	}
}

// op is a history operation on seat A1 of screening s.
func op(kind, who, outcome string, call, ret int64) histOp {
	o := histOp{Kind: kind, Customer: who, Screening: "s", Seats: []string{"A1"}, Outcome: outcome, InvokeNS: call, DoneNS: ret, Status: 201}
	if kind == kindBook || kind == kindConfirm {
		o.Booking = "booking-" + who
	}
	if outcome == "taken" {
		o.Outcome, o.Status, o.Code = outcomeFail, 409, "seat_taken"
	}
	return o
}

func TestNemesisModel(t *testing.T) {
	cases := []struct {
		name  string
		ops   []histOp
		final string // the final read of A1
		legal bool
	}{
		{"book then taken", []histOp{op(kindBook, "a", "ok", 0, 10), op(kindBook, "b", "taken", 20, 30)}, "b:a", true},
		{"two books of a free seat", []histOp{op(kindBook, "a", "ok", 0, 10), op(kindBook, "b", "ok", 20, 30)}, "b:b", false},
		{"book, cancel, book", []histOp{op(kindBook, "a", "ok", 0, 10), op(kindCancel, "a", "ok", 20, 30), op(kindBook, "b", "ok", 40, 50)}, "b:b", true},
		{"taken on a free seat", []histOp{op(kindBook, "b", "taken", 0, 10)}, "", false},
		{"unknown book seen at the end", []histOp{op(kindBook, "a", "unknown", 0, 10)}, "b:a", true},
		{"hold, confirm", []histOp{op(kindHold, "a", "ok", 0, 10), op(kindConfirm, "a", "ok", 20, 30)}, "b:a", true},
		{"hold released, then read held", []histOp{op(kindHold, "a", "ok", 0, 10), op(kindRelease, "a", "ok", 20, 30)}, "h:*", false},
		{"confirmed booking lost", []histOp{op(kindBook, "a", "ok", 0, 10)}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			final := map[string]string{}
			if c.final != "" {
				final["s/A1"] = c.final
			}
			h := seatOps(c.ops, final, 100, 110)
			got := porcupine.CheckOperations(nemesisModel(), h["s/A1"])
			if got != c.legal {
				t.Errorf("linearizable = %v, want %v", got, c.legal)
			}
		})
	}
}

func TestDoubleAndLostBookings(t *testing.T) {
	a, b := op(kindBook, "a", "ok", 0, 10), op(kindBook, "b", "ok", 20, 30)
	if got := doubleBookings([]histOp{a, b}); len(got) != 1 || len(got[0].History) != 2 {
		t.Errorf("two bookings of A1 without a cancel: %+v", got)
	}
	cancel := op(kindCancel, "a", "ok", 12, 15)
	cancel.Of = a.Booking
	if got := doubleBookings([]histOp{a, cancel, b}); len(got) != 0 {
		t.Errorf("a booking after a cancel counted as double: %+v", got)
	}
	final := finalState{bookings: map[string]string{"s/A1": b.Booking}}
	if got := lostBookings([]histOp{a, cancel, b}, final); len(got) != 0 {
		t.Errorf("cancelled booking counted as lost: %+v", got)
	}
	if got := lostBookings([]histOp{a, b}, final); len(got) != 1 {
		t.Errorf("a booking missing from the final map not counted as lost: %+v", got)
	}
}

// needCluster skips t with -short, and without the programs the
// nemesis's cluster needs (fails under REQUIRE_INTEGRATION=1).
func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a whole cluster; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, testenv.Need{What: "redis-server", Install: "apt-get install -y redis-server"}, "the nemesis starts its own Redis and Sentinels")
	}
	if bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(bins) == 0 {
		testenv.Unavailable(t, testenv.Need{What: "initdb", Install: "apt-get install -y postgresql"}, "the nemesis starts its own Postgres")
	}
}

// runNemesisForTest runs loadgen nemesis with args into a directory of its
// own and returns its exit status and report. It skips t without the
// programs the cluster needs (fails under REQUIRE_INTEGRATION=1).
func runNemesisForTest(t *testing.T, args ...string) (int, nemesisReport, string) {
	t.Helper()
	needCluster(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), append([]string{"nemesis", "-out", out}, args...), os.Getenv, &stdout, &stderr)
	status := exitStatus(err, &stderr)
	raw, rerr := os.ReadFile(filepath.Join(out, "report.json"))
	if rerr != nil {
		t.Fatalf("exit %d, no report.json (%v)\nstdout:\n%s\nstderr:\n%s", status, rerr, stdout.String(), stderr.String())
	}
	var rep nemesisReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	for _, f := range []string{"history.jsonl", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	t.Logf("exit %d: %s%s", status, stdout.String(), stderr.String())
	return status, rep, out
}

func TestNemesisCleanRunExitsZero(t *testing.T) {
	status, rep, _ := runNemesisForTest(t, "-time", "15s", "-seed", "1")
	if status != 0 {
		t.Fatalf("exit %d, anomalies %+v", status, rep.Anomalies)
	}
	kinds, _ := parseFaultKinds("all")
	if want := scheduleHash(makeSchedule(1, kinds, 15*time.Second, nemesisInstances)); rep.ScheduleSHA256 != want {
		t.Errorf("schedule_sha256 %s, want %s: the seed alone fixes the schedule", rep.ScheduleSHA256, want)
	}
	if rep.Seed != 1 || rep.Ops == 0 || rep.Confirmed == 0 || !rep.LedgerOK || rep.Linearizable != linearizable {
		t.Errorf("report: seed %d, %d ops, %d confirmed, ledger_ok %v, linearizable %v", rep.Seed, rep.Ops, rep.Confirmed, rep.LedgerOK, rep.Linearizable)
	}
}

func TestNemesisFindsDoubleBookingsWithTheGuardOff(t *testing.T) {
	status, rep, out := runNemesisForTest(t, "-time", "12s", "-seed", "2", "-faults", "pause", "-lock", "none", "-guard", "off", "-settle", "5s")
	if status != 1 {
		t.Fatalf("exit %d, want 1: no lock and no guard must double-book", status)
	}
	i := slices.IndexFunc(rep.Anomalies, func(a anomaly) bool { return a.Kind == "double_booking" })
	if rep.DoubleBookedSeats == 0 || i < 0 || len(rep.Anomalies[i].History) < 2 {
		t.Fatalf("double_booked_seats %d, anomalies %+v", rep.DoubleBookedSeats, rep.Anomalies)
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil || !strings.Contains(string(page), "Anomalies") || !strings.Contains(string(page), rep.Anomalies[i].History[0].Customer) {
		t.Errorf("report.html does not show the anomaly's history (%v)", err)
	}
}

func TestNemesisFindsAnUnsettledLedgerWithoutTheReconciler(t *testing.T) {
	status, rep, _ := runNemesisForTest(t, "-time", "15s", "-seed", "3", "-faults", "kill", "-payment-delay", "1s", "-reconcile-every", "0", "-settle", "10s")
	if status != 1 || rep.LedgerOK {
		t.Fatalf("exit %d, ledger_ok %v: instances killed mid-charge with no reconciler must leave the ledger open", status, rep.LedgerOK)
	}
	if !slices.ContainsFunc(rep.Anomalies, func(a anomaly) bool { return a.Kind == "ledger" }) {
		t.Errorf("no ledger anomaly in %+v", rep.Anomalies)
	}
}

// TestNemesisFaultsTheRedisLinks: partition and latency faults draw an
// instance's links to Redis too, and a run with one is injected, healed
// and valid. (TestRedisLinksCarryTheInstancesRedis, in internal/cluster,
// shows that a cut link cuts its instance off Redis.)
func TestNemesisFaultsTheRedisLinks(t *testing.T) {
	kinds := []string{"partition", "latency"}
	onRedis := func(target string) bool { return strings.HasSuffix(target, " -> redis") }
	var seed uint64
	for s := uint64(1); s < 100 && seed == 0; s++ {
		if slices.ContainsFunc(makeSchedule(s, kinds, 15*time.Second, nemesisInstances), func(f scheduledFault) bool { return onRedis(f.Target) }) {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no seed from 1 to 99 draws a fault on a Redis link in 15 s")
	}
	status, rep, _ := runNemesisForTest(t, "-time", "15s", "-seed", strconv.FormatUint(seed, 10), "-faults", "partition,latency")
	if status != 0 {
		t.Fatalf("seed %d: exit %d, anomalies %+v", seed, status, rep.Anomalies)
	}
	i := slices.IndexFunc(rep.Faults, func(f faultRecord) bool { return onRedis(f.Target) })
	if i < 0 {
		t.Fatalf("seed %d: no fault on a Redis link ran: %+v", seed, rep.Faults)
	}
	if f := rep.Faults[i]; f.Error != "" || f.EndS <= f.StartS {
		t.Errorf("%s on %s from %.1f s to %.1f s: error %q; want it injected and healed", f.Kind, f.Target, f.StartS, f.EndS, f.Error)
	}
}

func TestHistoryFileHasInvokeAndCompleteLines(t *testing.T) {
	h := &history{}
	h.ops = []histOp{
		{ID: 0, Kind: kindBook, InvokeNS: 10, DoneNS: 50, Status: 201, Outcome: outcomeOK, Booking: "b1"},
		{ID: 1, Kind: kindCancel, InvokeNS: 20, DoneNS: 30, Outcome: outcomeUnknown},
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := h.write(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var l struct {
			Type    string `json:"type"`
			ID      int    `json:"id"`
			Outcome string `json:"outcome"`
			Booking string `json:"booking"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		got = append(got, fmt.Sprintf("%s %d %s%s", l.Type, l.ID, l.Outcome, l.Booking))
	}
	want := []string{"invoke 0 ", "invoke 1 ", "complete 1 unknown", "complete 0 okb1"}
	if !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}
