package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// report is the outcome of one run: what was sent, what came back, and
// what verification found. Its JSON form is the public report that
// docs/loadgen.md describes.
type report struct {
	Scenario       string   `json:"scenario"`
	Targets        []string `json:"targets"`
	Strategy       string   `json:"strategy"`
	Guard          string   `json:"guard"`
	PaymentDelayMS int64    `json:"payment_delay_ms"`
	Screenings     []string `json:"screenings,omitempty"`
	Mode           string   `json:"mode"` // "closed" or "open" loop
	Clients        int      `json:"clients"`
	Rate           float64  `json:"rate,omitempty"`

	// Refused is set by compare when the server would not create a
	// screening with this strategy; nothing else is then filled in.
	Refused string `json:"refused,omitempty"`

	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"` // 201
	Conflicts int `json:"conflicts"` // 409, seat_taken or seat_busy
	Errors    int `json:"errors"`    // anything else, including no answer
	Ambiguous int `json:"ambiguous"` // no answer or 5xx: may have booked

	DurationS     float64 `json:"duration_s"`
	ThroughputRPS float64 `json:"throughput_rps"` // requests per second
	ConfirmedRPS  float64 `json:"confirmed_rps"`  // 201s per second
	// Parallelism is ConfirmedRPS times the time a booking spends in its
	// critical section; ParallelismBasis says which time was used:
	// "payment_delay" or "confirmed_latency" (see docs/loadgen.md).
	Parallelism      float64 `json:"parallelism"`
	ParallelismBasis string  `json:"parallelism_basis"`

	LatencyMS latencies      `json:"latency_ms"`
	Curve     []percentile   `json:"-"` // for the -html plot
	ByStatus  map[string]int `json:"by_status"`
	ByCode    map[string]int `json:"by_code"`

	// Watchers is -watchers; EventsReceived counts the booked and
	// cancelled events all of them received, and WatchersCut the streams
	// the server closed during the run (a page that fell too far behind).
	Watchers       int   `json:"watchers,omitempty"`
	EventsReceived int64 `json:"events_received,omitempty"`
	WatchersCut    int64 `json:"watchers_cut,omitempty"`

	// Payments are the payment provider's counts for the run (-payments):
	// overlaps are two lock holders of one seat at once.
	Payments *paymentCounts `json:"payments,omitempty"`

	// Holds are the figures of the hold and best scenarios (holds.go).
	Holds *holdCounts `json:"holds,omitempty"`
	// OnSale are the figures of the onsale scenario (onsalereport.go).
	OnSale *onsaleCounts `json:"onsale,omitempty"`
	// Timeline is the run over time, with the fault windows of -faults.
	Timeline *timeline `json:"timeline,omitempty"`

	counts
	Linearizable         verdict  `json:"linearizable"`
	NonLinearizableSeats []string `json:"non_linearizable_seats,omitempty"`

	// Result is CLEAN, HARMED, FAILED or NOT VERIFIED, and Harms every
	// harm the run showed (verdict.go); CleanMeans says what a clean
	// result needs of this run.
	Result     string `json:"result,omitempty"`
	Harms      []harm `json:"harms,omitempty"`
	CleanMeans string `json:"clean_means,omitempty"`
	// Thresholds are those of the -max-* and -min-* flags, measured.
	Thresholds []threshold `json:"thresholds,omitempty"`
}

// newReport starts the report of a run of cfg: what was asked for. The
// caller fills in what happened.
func newReport(cfg config) *report {
	r := &report{
		Scenario: cfg.scenario,
		Targets:  cfg.targets,
		Mode:     "closed",
		Clients:  cfg.clients,
		Rate:     cfg.rate,
	}
	if cfg.rate > 0 {
		r.Mode = "open"
	}
	return r
}

// latencies are percentiles in milliseconds, from intended send to answer.
type latencies struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// summarize fills in the request counts, throughput, latency and
// parallelism from the records of a run.
func (r *report) summarize(records []record, wall time.Duration) {
	r.Requests = len(records)
	r.ByStatus, r.ByCode = map[string]int{}, map[string]int{}
	r.DurationS = wall.Seconds()

	// Latencies in microseconds, from 1µs to an hour: an open loop that
	// falls far behind its schedule must still be recorded, not dropped.
	hist := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	var confirmedTime time.Duration
	for i := range records {
		rec := &records[i]
		us := max(rec.latency().Microseconds(), 1)
		if hist.RecordValue(us) != nil {
			_ = hist.RecordValue(hist.HighestTrackableValue())
		}
		r.count(rec)
		if rec.confirmed() {
			confirmedTime += rec.done - rec.sent
		}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	r.LatencyMS = latencies{
		P50:  ms(hist.ValueAtQuantile(50)),
		P90:  ms(hist.ValueAtQuantile(90)),
		P99:  ms(hist.ValueAtQuantile(99)),
		P999: ms(hist.ValueAtQuantile(99.9)),
		Max:  ms(hist.Max()),
		Mean: hist.Mean() / 1000,
	}
	r.Curve = latencyCurve(hist)

	if wall <= 0 {
		return
	}
	r.ThroughputRPS = float64(r.Requests) / wall.Seconds()
	r.ConfirmedRPS = float64(r.Succeeded) / wall.Seconds()
	// Little's law over critical sections: how many bookings were, on
	// average, inside one at the same time.
	if r.PaymentDelayMS > 0 {
		r.ParallelismBasis = "payment_delay"
		r.Parallelism = r.ConfirmedRPS * float64(r.PaymentDelayMS) / 1000
	} else {
		r.ParallelismBasis = "confirmed_latency"
		if r.Succeeded > 0 {
			r.Parallelism = r.ConfirmedRPS * (confirmedTime / time.Duration(r.Succeeded)).Seconds()
		}
	}
}

// count adds the outcome of one request to the counts.
func (r *report) count(rec *record) {
	switch {
	case rec.confirmed():
		r.Succeeded++
	case rec.status == http.StatusConflict:
		r.Conflicts++
	default:
		r.Errors++
	}
	if rec.ambiguous() {
		r.Ambiguous++
	}
	if rec.status == 0 {
		r.ByStatus["no_answer"]++
	} else {
		r.ByStatus[strconv.Itoa(rec.status)]++
	}
	if !rec.confirmed() {
		r.ByCode[errorCode(rec)]++
	}
}

// errorCode names the outcome of a request that was not confirmed: the
// API's error code, or what went wrong when there was none.
func errorCode(r *record) string {
	if r.status != 0 {
		if r.code != "" {
			return r.code
		}
		return "http_" + strconv.Itoa(r.status)
	}
	var ne net.Error
	if errors.Is(r.err, context.DeadlineExceeded) || (errors.As(r.err, &ne) && ne.Timeout()) {
		return "timeout"
	}
	if errors.Is(r.err, context.Canceled) {
		return "cancelled"
	}
	return "no_answer"
}

// writeText prints the report as a table for people.
func writeText(w io.Writer, r *report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	load := fmt.Sprintf("%d clients, closed loop", r.Clients)
	if r.Mode == "open" {
		load = fmt.Sprintf("%g req/s open loop, at most %d in flight", r.Rate, r.Clients)
	}
	row("scenario", "%s (%s)", r.Scenario, load)
	row("targets", "%s", strings.Join(r.Targets, ", "))
	row("screenings", "%s", strings.Join(r.Screenings, ", "))
	row("strategy", "lock %s, guard %s, payment delay %v", r.Strategy, r.Guard, time.Duration(r.PaymentDelayMS)*time.Millisecond)
	fmt.Fprintln(tw)
	row("requests", "%d in %.2fs", r.Requests, r.DurationS)
	row("succeeded", "%d", r.Succeeded)
	row("conflicts", "%d", r.Conflicts)
	row("errors", "%d (%d ambiguous: no answer or 5xx)", r.Errors, r.Ambiguous)
	row("throughput", "%.1f req/s (%.1f confirmed/s)", r.ThroughputRPS, r.ConfirmedRPS)
	row("parallelism", "%.2f (basis: %s)", r.Parallelism, r.ParallelismBasis)
	l := r.LatencyMS
	row("latency", "p50 %s  p90 %s  p99 %s  p99.9 %s  max %s", fmtMS(l.P50), fmtMS(l.P90), fmtMS(l.P99), fmtMS(l.P999), fmtMS(l.Max))
	row("by status", "%s", fmtCounts(r.ByStatus))
	row("by code", "%s", fmtCounts(r.ByCode))
	if r.Watchers > 0 {
		row("watchers", "%d event streams, %d events received, %d cut by the server", r.Watchers, r.EventsReceived, r.WatchersCut)
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeTimelineText(w, r.Timeline); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if p := r.Payments; p != nil {
		writePayments(row, p)
	}
	if h := r.Holds; h != nil {
		writeHolds(row, h)
	}
	if o := r.OnSale; o != nil {
		writeOnSale(row, o)
	}
	row("double-booked seats", "%d", r.DoubleBookedSeats)
	row("lost bookings", "%d", r.LostBookings)
	row("phantom seats", "%d (%d explained by lost answers, %d contradicted a refusal)",
		r.PhantomSeats, r.PhantomSeatsExplained, r.PhantomSeatsContradicted)
	lin := string(r.Linearizable)
	if len(r.NonLinearizableSeats) > 0 {
		lin += " (seats: " + strings.Join(r.NonLinearizableSeats, ", ") + ")"
	}
	row("linearizable", "%s", lin)
	for _, t := range r.Thresholds {
		row("threshold", "%s", t.line())
	}
	row("clean means", "%s", r.CleanMeans)
	row("result", "%s", r.verdictLine())
	return tw.Flush()
}

// writePayments prints the provider's counts and the ledger.
func writePayments(row func(name, format string, args ...any), p *paymentCounts) {
	voids := ""
	if p.Voids != nil {
		voids = fmt.Sprintf(", %d voids", *p.Voids)
	}
	row("payments", "%d charges, %d refunds%s, %d refused stale", p.Charges, p.Refunds, voids, p.RefusedStale)
	note := ""
	if p.Charges == 0 && p.Overlaps > 0 && !p.NotCharging {
		// The provider counts an overlap when a charge begins, and
		// charges only what is still awaited when its delay is over.
		note = "; none was charged: every one was given up before its payment was made"
	}
	row("overlaps", "%d (charges for a seat while another was in progress: two lock holders at once)%s", p.Overlaps, note)
	row("ledger", "%s", p.Ledger)
}

// writeTimelineText prints the timeline as a table, one row per bucket,
// the rows inside a fault window marked with its name.
func writeTimelineText(w io.Writer, tl *timeline) error {
	if tl == nil || len(tl.Buckets) == 0 {
		return nil
	}
	bucketLen := time.Duration(tl.BucketS * float64(time.Second))
	fmt.Fprintf(w, "over time (%v buckets, by when the answer came)\n", bucketLen)
	for _, f := range tl.Faults {
		fmt.Fprintf(w, "fault %q from %.2fs to %.2fs\n", f.Name, f.StartS, f.EndS)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "t\treq/s\tok/s\tp50\tp99\t503\tother\t"
	if tl.Buckets[0].Overlaps != nil {
		header += "overlaps\t"
	}
	fmt.Fprintln(tw, header+"fault\t")
	for _, b := range tl.Buckets {
		okRate := 0.0
		if b.Requests > 0 {
			okRate = b.ThroughputRPS * float64(b.Succeeded) / float64(b.Requests)
		}
		line := fmt.Sprintf("%.2fs\t%.0f\t%.0f\t%s\t%s\t%d\t%d\t", b.StartS, b.ThroughputRPS, okRate, fmtMS(b.P50MS), fmtMS(b.P99MS), b.Errors503, b.ErrorsOther)
		if b.Overlaps != nil {
			line += fmt.Sprintf("%d\t", *b.Overlaps)
		}
		fmt.Fprintln(tw, line+strings.Join(tl.faultsDuring(b), ", ")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

func fmtMS(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).Round(10 * time.Microsecond).String()
}

// fmtCounts prints a count map as "k: n  k: n", keys sorted.
func fmtCounts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, "  ")
}
