package main

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"strings"
)

// writeNemesisHTML writes report.html: the verdict, the figures, the run
// over time with every fault shaded, the schedule as it ran, and each
// anomaly with its piece of history.
func writeNemesisHTML(path string, cfg nemesisConfig, r *nemesisReport) error {
	var b strings.Builder
	esc := html.EscapeString
	htmlHead(&b, fmt.Sprintf("loadgen nemesis, seed %d", r.Seed))
	verdict, class := "every check passed", "clean"
	if len(r.Anomalies) > 0 {
		verdict, class = fmt.Sprintf("%d anomalies", len(r.Anomalies)), "failed"
	}
	fmt.Fprintf(&b, "<p class=\"verdict %s\">%s</p>\n<p>Reproduce: <code>%s</code><br>Commit <code>%s</code>, schedule_sha256 <code>%s</code></p>\n",
		class, esc(verdict), esc(cfg.command(r.Seed)), esc(r.Commit), esc(r.ScheduleSHA256))
	b.WriteString("<h2>Figures</h2>\n<table>\n")
	rows := [][2]string{
		{"operations", fmt.Sprintf("%d in %.1fs (%.0f/s)", r.Ops, r.DurationS, r.ThroughputRPS)},
		{"latency p50 / p99 / max", fmt.Sprintf("%s / %s / %s ms", fmtMS(r.LatencyMS.P50), fmtMS(r.LatencyMS.P99), fmtMS(r.LatencyMS.Max))},
		{"confirmed bookings", fmt.Sprint(r.Confirmed)},
		{"double-booked seats", fmt.Sprint(r.DoubleBookedSeats)},
		{"lost bookings", fmt.Sprint(r.LostBookings)},
		{"linearizable (per seat)", strings.Trim(mustJSON(r.Linearizable), `"`)},
		{"5xx other than 503", fmt.Sprint(r.Status500)},
		{"ledger", fmt.Sprintf("%d charges - %d refunds vs %d bookings: %v (after %.1fs)", r.Charges, r.Refunds, r.FinalBookings, okWord(r.LedgerOK), r.LedgerWaitS)},
		{"overlapping charges", fmt.Sprintf("%d %s", r.Overlaps, mustJSON(r.OverlapsByFault))},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td></tr>\n", esc(row[0]), esc(row[1]))
	}
	b.WriteString("</table>\n<h2>Over time</h2>\n")
	timelinePlot(&b, "nemesis", r.Timeline)
	b.WriteString("<h2>Faults</h2>\n<table><tr><th>kind</th><th>target</th><th>start s</th><th>end s</th><th>recovery s</th><th>overlaps</th><th>error</th></tr>\n")
	for _, f := range r.Faults {
		rec := "none"
		if f.RecoveryS != nil {
			rec = fmt.Sprintf("%.2f", *f.RecoveryS)
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%.2f</td><td>%.2f</td><td>%s</td><td>%d</td><td>%s</td></tr>\n",
			esc(f.Kind), esc(f.Target), f.StartS, f.EndS, rec, f.Overlaps, esc(f.Error))
	}
	b.WriteString("</table>\n")
	anomalySection(&b, r.Anomalies)
	b.WriteString("</body></html>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// anomalySection lists each anomaly with the history that shows it.
func anomalySection(b *strings.Builder, as []anomaly) {
	if len(as) == 0 {
		return
	}
	esc := html.EscapeString
	b.WriteString("<h2>Anomalies</h2>\n")
	for i, a := range as {
		fmt.Fprintf(b, "<h3>%d. %s</h3>\n<p>%s</p>\n", i+1, esc(a.Kind), esc(a.Message))
		if a.Visualization != "" {
			fmt.Fprintf(b, "<p><a href=\"%s\">porcupine's visualisation of this seat</a></p>\n", esc(a.Visualization))
		}
		if len(a.History) == 0 {
			continue
		}
		b.WriteString("<table><tr><th>op</th><th>client</th><th>instance</th><th>kind</th><th>seats</th><th>customer</th><th>invoke s</th><th>done s</th><th>status</th><th>outcome</th><th>booking</th></tr>\n")
		for _, op := range a.History {
			fmt.Fprintf(b, "<tr><td>%d</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.3f</td><td>%.3f</td><td>%d %s</td><td>%s</td><td>%s</td></tr>\n",
				op.ID, op.Client, esc(op.Instance), esc(op.Kind), esc(strings.Join(op.Seats, " ")), esc(op.Customer),
				float64(op.InvokeNS)/1e9, float64(op.DoneNS)/1e9, op.Status, esc(op.Code), esc(op.Outcome), esc(op.Booking))
		}
		b.WriteString("</table>\n")
	}
}

func okWord(ok bool) string {
	if ok {
		return "balanced"
	}
	return "NOT balanced"
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v) // plain values: it cannot fail
	return string(b)
}

// command is the command line that runs the same schedule again.
func (cfg nemesisConfig) command(seed uint64) string {
	parts := []string{"loadgen nemesis", fmt.Sprintf("-seed %d", seed), "-time " + cfg.total.String(),
		"-faults " + strings.Join(cfg.kinds, ",")}
	if cfg.lock != "" {
		parts = append(parts, "-lock "+cfg.lock)
	}
	if cfg.guard != "" {
		parts = append(parts, "-guard "+cfg.guard)
	}
	parts = append(parts, "-payment-delay "+cfg.paymentDelay.String(), "-reconcile-every "+cfg.reconcileEvery.String())
	return strings.Join(parts, " ")
}
