package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// loadBookingsEnv names the variable that turns the load test on, with the
// number of bookings to send.
const loadBookingsEnv = "SEATLOCK_LOAD_BOOKINGS"

// loadReport is what the load test reads of loadgen's JSON report.
type loadReport struct {
	Scenario          string  `json:"scenario"`
	Strategy          string  `json:"strategy"`
	Requests          int     `json:"requests"`
	Succeeded         int     `json:"succeeded"`
	Conflicts         int     `json:"conflicts"`
	Errors            int     `json:"errors"`
	DoubleBookedSeats int     `json:"double_booked_seats"`
	LostBookings      int     `json:"lost_bookings"`
	ThroughputRPS     float64 `json:"throughput_rps"`
	DurationS         float64 `json:"duration_s"`
	// Linearizable is true, false or "unknown" (the check ran out of
	// time); only false is a violation.
	Linearizable any `json:"linearizable"`
	LatencyMS    struct {
		P99 float64 `json:"p99"`
	} `json:"latency_ms"`
}

// TestLoad sends SEATLOCK_LOAD_BOOKINGS bookings through the real loadgen
// binary to three API instances on one Redis and one Postgres, spread over
// every safe strategy with a shared lock service and every scenario, and
// requires loadgen's verifier and its porcupine check to find nothing.
func TestLoad(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv(loadBookingsEnv))
	if total <= 0 {
		t.Skipf("set %s=100000 (the count of bookings) to run the load test", loadBookingsEnv)
	}
	env := map[string]string{
		"REDIS_URL":    testenv.RedisURL(t),
		"DATABASE_URL": testenv.NewDatabase(t),
		// The file strategy needs one directory shared by the instances
		// (they are on one host) and by nobody else.
		"LOCK_DIR": t.TempDir(),
	}
	insts := make([]*instance, 3)
	for i := range insts {
		insts[i] = startAPI(t, env)
	}
	targets := insts[0].url + "," + insts[1].url + "," + insts[2].url

	strategies := []string{"keyed+redis", "redis", "postgres", "file"}
	scenarios := []string{"spread", "hot", "mixed", "multi"}
	runs := len(strategies) * len(scenarios)
	total = max(total, runs)
	start := time.Now()
	var reports []loadReport // subtests run one after the other
	run := 0
	for _, strategy := range strategies {
		for _, scenario := range scenarios {
			// total split in runs, the remainder on the first ones
			per := total / runs
			if run < total%runs {
				per++
			}
			run++
			t.Run(strategy+"/"+scenario, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, binaries.loadgen, "-targets", targets, "-scenario", scenario,
					"-lock", strategy, "-requests", strconv.Itoa(per), "-clients", "32",
					"-check-timeout", "30s", "-json")
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if err != nil {
					t.Errorf("loadgen %s/%s: %v\n%s", strategy, scenario, err, tail(stderr.String(), 2000))
				}
				var r loadReport
				if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
					t.Fatalf("loadgen report: %v\n%s", err, tail(stdout.String(), 2000))
				}
				t.Logf("%s/%s: %d requests, %d confirmed, %d conflicts, %d errors, %.0f req/s, p99 %.1fms, double-booked %d, lost %d, linearizable %v",
					strategy, scenario, r.Requests, r.Succeeded, r.Conflicts, r.Errors, r.ThroughputRPS, r.LatencyMS.P99,
					r.DoubleBookedSeats, r.LostBookings, r.Linearizable)
				if r.DoubleBookedSeats != 0 || r.LostBookings != 0 {
					t.Errorf("double-booked seats %d, lost bookings %d: want 0 and 0", r.DoubleBookedSeats, r.LostBookings)
				}
				if r.Linearizable == false {
					t.Error("porcupine found the history not linearizable")
				}
				if r.Requests != per {
					t.Errorf("%d requests sent, want %d", r.Requests, per)
				}
				reports = append(reports, r)
			})
		}
	}
	var sent, confirmed, errs int
	for _, r := range reports {
		sent, confirmed, errs = sent+r.Requests, confirmed+r.Succeeded, errs+r.Errors
	}
	t.Logf("load: %d bookings sent in %d runs over 3 instances in %v: %d confirmed, %d errors",
		sent, len(reports), time.Since(start).Round(time.Second), confirmed, errs)
}

// tail returns the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}
