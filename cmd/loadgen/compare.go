package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seatlock/seatlock/reservation"
)

// strategy is one lock strategy and write guard that compare runs.
type strategy struct{ lock, guard string }

// safe reports whether the strategy must never double-book, as
// reservation's catalogue decides it.
func (s strategy) safe() bool {
	return reservation.Safe(reservation.Strategy(s.lock), reservation.Guard(s.guard))
}

// unguardedToo reports whether compare also runs strategy l with
// guard=off, right before its fenced run: true for the ones whose lock a
// fault or a second instance gets past, so that the blind write shows what
// the fence stops.
func unguardedToo(l reservation.Strategy) bool {
	switch l {
	case reservation.LockNone, reservation.LockKeyed, reservation.LockRedis:
		return true
	}
	return false
}

// compareStrategies lists what compare runs, in the order of reservation's
// catalogue, from the broken to the best: every strategy with the fence,
// and each in unguardedToo with guard=off next to it. A strategy the
// servers do not offer (not in demo mode, or its backend not configured)
// is shown as refused, with the server's reason.
func compareStrategies() []strategy {
	var runs []strategy
	for _, s := range reservation.Strategies() {
		if unguardedToo(s.Name) {
			runs = append(runs, strategy{string(s.Name), string(reservation.GuardOff)})
		}
		runs = append(runs, strategy{string(s.Name), string(reservation.GuardFence)})
	}
	return runs
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
	results, err := runStrategies(ctx, cfg, newProgress(cfg, stderr))
	if err != nil {
		return err
	}
	if err := writeCompareReports(cfg, results, stdout); err != nil {
		return err
	}
	var failed []string
	for i, s := range compareStrategies() {
		if r := results[i]; s.safe() && r.failed() {
			failed = append(failed, fmt.Sprintf("%s (%s)", runName(r), strings.Join(r.failures(), ", ")))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: safe strategies failed: %s", errUnsafe, strings.Join(failed, "; "))
	}
	return nil
}

// runStrategies runs cfg's scenario under every strategy of
// compareStrategies, in that order. A strategy the server refuses is a
// report with only its reason.
func runStrategies(ctx context.Context, cfg config, p progress) ([]*report, error) {
	var results []*report
	for _, s := range compareStrategies() {
		if err := ctx.Err(); err != nil {
			return nil, err
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
			return nil, fmt.Errorf("%s/%s: %w", s.lock, s.guard, err)
		}
		results = append(results, rep)
	}
	return results, nil
}

// writeCompareReports prints the table (or the JSON) of the results, and
// writes the HTML report of -html.
func writeCompareReports(cfg config, results []*report, stdout io.Writer) error {
	means := cleanMeans(results)
	var err error
	if cfg.jsonOutput {
		// What clean means is said once, at the top, not in every result.
		rows := make([]report, len(results))
		for i, r := range results {
			rows[i] = *r
			rows[i].CleanMeans = ""
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(struct {
			CleanMeans string   `json:"clean_means"`
			Results    []report `json:"results"`
		}{means, rows})
	} else {
		err = writeCompare(stdout, results, cfg.wide, means)
	}
	if err != nil || cfg.htmlFile == "" {
		return err
	}
	return writeHTMLFile(cfg.htmlFile, "loadgen compare: "+cfg.scenario, results)
}

// cleanMeans is what clean means for the results of compare: every
// strategy runs the same scenario, so it means the same for all.
func cleanMeans(results []*report) string {
	for _, r := range results {
		if r.CleanMeans != "" {
			return r.CleanMeans
		}
	}
	return ""
}
