package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// strategy is one lock strategy and write guard that compare runs.
type strategy struct{ lock, guard string }

// safe reports whether the strategy must never double-book: everything but
// no lock at all and a blind final write.
func (s strategy) safe() bool { return s.lock != "none" && s.guard != "off" }

// compareStrategies lists what compare runs, from the broken to the best:
// each unsafe variant next to the safe one it breaks, then the other
// backends. A strategy the servers do not offer (not in demo mode, or its
// backend not configured) is shown as refused, with the server's reason.
func compareStrategies() []strategy {
	return []strategy{
		{"none", "off"},
		{"none", "fence"},
		{"global", "fence"},
		{"keyed", "off"},
		{"keyed", "fence"},
		{"redis", "off"},
		{"redis", "fence"},
		{"keyed+redis", "fence"},
		{"postgres", "fence"},
		{"postgres-xact", "fence"},
		{"redlock", "fence"},
		{"file", "fence"},
		{"zookeeper", "fence"},
	}
}

// runCompare runs the scenario of cfg once per strategy, each on fresh
// screenings, and prints one table (or {"results":[...]}). It returns
// errUnsafe only when a safe strategy failed verification; the unsafe ones
// are expected to fail, which is what the table is there to show.
func runCompare(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	switch {
	case cfg.screening != "":
		return usagef("compare creates a screening per strategy: -screening cannot be used")
	case cfg.scenario == scenarioHealthz:
		return usagef("compare books seats: -scenario healthz is for a single run")
	case cfg.lock != "" || cfg.guard != "":
		return usagef("compare runs every strategy: -lock and -guard cannot be used")
	}
	p := newProgress(cfg, stderr)
	var results []*report
	var unsafe []string
	for _, s := range compareStrategies() {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := cfg
		c.lock, c.guard = s.lock, s.guard
		rep, err := runScenario(ctx, c, p)
		var refused *refusedError
		switch {
		case errors.As(err, &refused):
			why := "server not in demo mode"
			if s.safe() {
				why = refused.message
			}
			rep = &report{Scenario: cfg.scenario, Targets: cfg.targets, Strategy: s.lock, Guard: s.guard, Refused: why}
		case err != nil:
			return fmt.Errorf("%s/%s: %w", s.lock, s.guard, err)
		}
		if s.safe() && rep.failed() {
			unsafe = append(unsafe, fmt.Sprintf("%s/%s (%s)", s.lock, s.guard, strings.Join(rep.failures(), ", ")))
		}
		results = append(results, rep)
	}

	var err error
	if cfg.jsonOutput {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			CleanMeans string    `json:"clean_means"`
			Results    []*report `json:"results"`
		}{cleanMeansOnce(results), results})
	} else {
		err = writeCompare(stdout, results)
	}
	if err != nil {
		return err
	}
	if cfg.htmlFile != "" {
		if err := writeHTMLFile(cfg.htmlFile, "loadgen compare: "+cfg.scenario, results); err != nil {
			return err
		}
	}
	if len(unsafe) > 0 {
		return fmt.Errorf("%w: safe strategies failed: %s", errUnsafe, strings.Join(unsafe, "; "))
	}
	return nil
}

// cleanMeansOnce takes what clean means off every result and returns it,
// for the report to say it once: every strategy runs the same scenario,
// so it means the same for all.
func cleanMeansOnce(results []*report) string {
	means := ""
	for _, r := range results {
		if means == "" {
			means = r.CleanMeans
		}
		r.CleanMeans = ""
	}
	return means
}

// writeCompare prints one row per strategy. A refused strategy's row has
// a dash in every column and the reason after the last one, so that it
// cannot widen the columns of the others.
func writeCompare(w io.Writer, results []*report) error {
	withPayments := false
	for _, r := range results {
		withPayments = withPayments || r.Payments != nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"STRATEGY", "GUARD", "CONFIRMED", "ERRORS", "DOUBLE-BOOKED", "LOST"}
	if withPayments {
		header = append(header, "OVERLAPS", "REFUNDS")
	}
	header = append(header, "THROUGHPUT", "P50", "P99", "PARALLELISM", "LINEARIZABLE")
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range results {
		cells := []string{r.Strategy, r.Guard}
		if r.Refused != "" {
			for range header[2:] {
				cells = append(cells, "-")
			}
			fmt.Fprintf(tw, "%s\trefused: %s\n", strings.Join(cells, "\t"), r.Refused)
			continue
		}
		cells = append(cells, strconv.Itoa(r.Succeeded), strconv.Itoa(r.Errors), strconv.Itoa(r.DoubleBookedSeats), strconv.Itoa(r.LostBookings))
		if withPayments {
			overlaps, refunds := "-", "-"
			if p := r.Payments; p != nil {
				overlaps, refunds = strconv.FormatInt(p.Overlaps, 10), strconv.FormatInt(p.Refunds, 10)
			}
			cells = append(cells, overlaps, refunds)
		}
		cells = append(cells, fmt.Sprintf("%.0f req/s", r.ThroughputRPS), fmtMS(r.LatencyMS.P50), fmtMS(r.LatencyMS.P99),
			fmt.Sprintf("%.2f", r.Parallelism), string(r.Linearizable))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range thresholdSummary(results) {
		fmt.Fprintln(w, "threshold "+line)
	}
	note := "\nnone and guard off are unsafe on purpose: only the other strategies must show 0 double-booked and 0 lost."
	if withPayments {
		note += "\nOverlaps are charges for a seat that began while another was in progress: two lock holders at once;\nrefunds are charges given back because the guarded write refused the booking."
	}
	_, err := fmt.Fprintln(w, note)
	return err
}
