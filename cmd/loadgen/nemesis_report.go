package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"
)

// nemesisReport is report.json.
type nemesisReport struct {
	Seed           uint64  `json:"seed"`
	ScheduleSHA256 string  `json:"schedule_sha256"`
	Commit         string  `json:"commit"`
	DurationS      float64 `json:"duration_s"`
	Lock           string  `json:"lock,omitempty"`
	Guard          string  `json:"guard,omitempty"`
	Clients        int     `json:"clients"`
	Instances      int     `json:"instances"`
	ReconcileEvery string  `json:"reconcile_every"`

	Ops           int                       `json:"ops"`
	Outcomes      map[string]map[string]int `json:"outcomes"` // kind -> outcome -> count
	ThroughputRPS float64                   `json:"throughput_rps"`
	LatencyMS     latencies                 `json:"latency_ms"`

	Confirmed         int              `json:"confirmed"` // bookings the clients were told were made
	FinalBookings     int              `json:"final_bookings"`
	DoubleBookedSeats int              `json:"double_booked_seats"`
	LostBookings      int              `json:"lost_bookings"`
	Status500         int              `json:"status_500"`
	Overlaps          int64            `json:"overlaps"`
	OverlapsByFault   map[string]int64 `json:"overlaps_by_fault"`
	Charges           int64            `json:"charges"`
	Refunds           int64            `json:"refunds"`
	Voids             int64            `json:"voids"`
	LedgerOK          bool             `json:"ledger_ok"`
	LedgerWaitS       float64          `json:"ledger_wait_s"`
	Linearizable      verdict          `json:"linearizable"`

	Faults    []faultRecord `json:"faults"`
	Anomalies []anomaly     `json:"anomalies"`
	Timeline  *timeline     `json:"timeline"`
}

// check runs every check on the history and the final state and lists
// what failed as anomalies.
func (r *nemesisReport) check(h *history, final finalState, samples []overlapSample, dir string, budget time.Duration) {
	ops := h.ops
	r.Anomalies = []anomaly{}
	doubles, lost := doubleBookings(ops), lostBookings(ops, final)
	r.DoubleBookedSeats, r.LostBookings = len(doubles), len(lost)
	fives := status500s(ops)
	r.Status500 = len(fives)
	var lin []anomaly
	r.Linearizable, lin = linearizabilityCheck(ops, final, budget, dir)
	r.Anomalies = append(r.Anomalies, doubles...)
	r.Anomalies = append(r.Anomalies, lost...)
	r.Anomalies = append(r.Anomalies, lin...)
	r.Anomalies = append(r.Anomalies, fives...)
	if !r.LedgerOK {
		r.Anomalies = append(r.Anomalies, anomaly{Kind: "ledger", Message: fmt.Sprintf(
			"after %.1fs the provider holds %d charges - %d refunds = %d, but the seat maps show %d bookings",
			r.LedgerWaitS, r.Charges, r.Refunds, r.Charges-r.Refunds, r.FinalBookings), History: unsettled(ops, final)})
	}
	r.overlapsByFault(samples)
	r.recovery(ops)
}

// unsettled is the history a ledger that does not balance points at: the
// bookings and confirms of unknown outcome that left no booking on the
// final maps, whose charges (if any were made) nothing confirmed.
func unsettled(ops []histOp, final finalState) []histOp {
	shown := map[string]bool{}
	for _, v := range final.values {
		shown[v] = true
	}
	var out []histOp
	for _, op := range ops {
		if op.Outcome == outcomeUnknown && op.Kind != kindHold && op.Kind != kindRelease && op.Kind != kindCancel && !shown["b:"+op.Customer] {
			out = append(out, op)
		}
	}
	return out[:min(len(out), maxExcerpt)]
}

// faultGrace is how long after a fault's end its effects are still
// counted as its own (a lease that a pause let expire ends later).
const faultGrace = 2 * time.Second

// overlapsByFault puts every overlap the provider counted under the fault
// during which (or within faultGrace of whose end) it was seen, or "none".
func (r *nemesisReport) overlapsByFault(samples []overlapSample) {
	r.OverlapsByFault = map[string]int64{}
	for i := 1; i < len(samples); i++ {
		n := samples[i].overlaps - samples[i-1].overlaps
		if n == 0 {
			continue
		}
		r.Overlaps += n
		at, kind := samples[i].at.Seconds(), "none"
		for j := range r.Faults {
			f := &r.Faults[j]
			if at >= f.StartS && at <= f.EndS+faultGrace.Seconds() {
				kind = f.Kind
				f.Overlaps += n
				break
			}
		}
		r.OverlapsByFault[kind] += n
	}
}

// recovery sets each fault's recovery time: from its end to the first
// success on the instance it hit (any instance, for a backend fault).
func (r *nemesisReport) recovery(ops []histOp) {
	for j := range r.Faults {
		f := &r.Faults[j]
		end := int64(f.EndS * 1e9)
		api := ""
		if strings.HasPrefix(f.Target, "api-") {
			api, _, _ = strings.Cut(f.Target, " ")
		}
		first := int64(-1)
		for _, op := range ops {
			if op.Outcome == outcomeOK && op.DoneNS >= end && (api == "" || op.Instance == api) && (first < 0 || op.DoneNS < first) {
				first = op.DoneNS
			}
		}
		if first >= 0 {
			s := float64(first-end) / 1e9
			f.RecoveryS = &s
		}
	}
}

// summarize counts the operations and draws the timeline.
func (r *nemesisReport) summarize(h *history, wall time.Duration, ran []faultRecord) {
	r.Ops = len(h.ops)
	r.Outcomes = map[string]map[string]int{}
	records := make([]record, 0, len(h.ops))
	var lat []time.Duration
	for _, op := range h.ops {
		if r.Outcomes[op.Kind] == nil {
			r.Outcomes[op.Kind] = map[string]int{}
		}
		r.Outcomes[op.Kind][op.Outcome]++
		if makesBooking(op) {
			r.Confirmed++
		}
		d := time.Duration(op.DoneNS - op.InvokeNS)
		lat = append(lat, d)
		rec := record{screening: op.Screening, seats: op.Seats, customer: op.Customer,
			intended: time.Duration(op.InvokeNS), sent: time.Duration(op.InvokeNS), done: time.Duration(op.DoneNS)}
		rec.status = op.Status
		if op.Outcome == outcomeOK {
			rec.status = 201 // the timeline counts successes as 201s
		}
		records = append(records, rec)
	}
	r.ThroughputRPS = float64(r.Ops) / wall.Seconds()
	r.LatencyMS = percentiles(lat)
	var windows []faultWindow
	for _, f := range ran {
		windows = append(windows, faultWindow{Name: f.Kind + " " + f.Target, StartS: f.StartS, EndS: f.EndS})
	}
	r.Timeline = newTimeline(records, wall, nil, windows)
}

// commit is the commit the binary was built from, or else the working
// tree's HEAD (which the cluster's cmd/api is built from), "+dirty" when
// the tree has changes.
func commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	head := strings.TrimSpace(string(out))
	if status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(status) > 0 {
		head += "+dirty"
	}
	return head
}

// finishNemesis writes report.json and report.html, prints the verdict
// and returns errUnsafe (wrapped) when a check failed.
func finishNemesis(cfg nemesisConfig, r *nemesisReport, stdout io.Writer) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg.out+"/report.json", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	if err := writeNemesisHTML(cfg.out+"/report.html", cfg, r); err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	fmt.Fprintf(stdout, "nemesis: seed %d, schedule_sha256 %s, %d ops (%.0f/s), %d confirmed, %d faults, %d anomalies, linearizable %s; report in %s\n",
		r.Seed, r.ScheduleSHA256, r.Ops, r.ThroughputRPS, r.Confirmed, len(r.Faults), len(r.Anomalies), r.Linearizable, cfg.out)
	for _, f := range r.Faults {
		if f.Error != "" {
			return fmt.Errorf("%w: fault %s on %s: %s", errCouldNotRun, f.Kind, f.Target, f.Error)
		}
	}
	if len(r.Anomalies) > 0 {
		counts := map[string]int{}
		for _, a := range r.Anomalies {
			counts[a.Kind]++
		}
		var kinds []string
		for _, k := range sortedKeys(counts) {
			kinds = append(kinds, fmt.Sprintf("%d %s", counts[k], k))
		}
		return fmt.Errorf("%w: nemesis: %d anomalies (%s), reproduce with: %s", errUnsafe, len(r.Anomalies), strings.Join(kinds, ", "), cfg.command(r.Seed))
	}
	return nil
}
