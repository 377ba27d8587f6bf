package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
			unsafe = append(unsafe, s.lock+"/"+s.guard)
		}
		results = append(results, rep)
	}

	var err error
	if cfg.jsonOutput {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			Results []*report `json:"results"`
		}{results})
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
		return fmt.Errorf("%w: safe strategies double-booked or lost bookings: %s", errUnsafe, strings.Join(unsafe, ", "))
	}
	return nil
}

// writeCompare prints one row per strategy.
func writeCompare(w io.Writer, results []*report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STRATEGY\tGUARD\tCONFIRMED\tDOUBLE-BOOKED\tLOST\tTHROUGHPUT\tP50\tP99\tPARALLELISM\tLINEARIZABLE\t")
	for _, r := range results {
		if r.Refused != "" {
			fmt.Fprintf(tw, "%s\t%s\trefused (%s)\n", r.Strategy, r.Guard, r.Refused)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.0f req/s\t%s\t%s\t%.2f\t%s\t\n",
			r.Strategy, r.Guard, r.Succeeded, r.DoubleBookedSeats, r.LostBookings, r.ThroughputRPS,
			fmtMS(r.LatencyMS.P50), fmtMS(r.LatencyMS.P99), r.Parallelism, r.Linearizable)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nnone and guard off are unsafe on purpose: only the other strategies must show 0 double-booked and 0 lost.")
	return err
}
