package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Thresholds, as k6 has them: a limit on one figure of the report that
// fails the run (exit status 1) when the figure crosses it, whatever the
// verdict would have been. Every threshold set is listed in the report,
// with its limit, the figure measured and whether it passed.

// thresholdKind is one figure a threshold can limit.
type thresholdKind struct {
	flag   string // without the dash: "max-overlaps"
	figure string // the report's field: "overlaps", "latency_ms.p99"
	label  string // how the verdict names the figure: "P99"
	unit   string // of the limit and the figure: "charges", "ms", "req/s"
	max    bool   // a maximum (the figure must not exceed it), else a minimum
	usage  string
	// measure reads the figure off a report; ok is false when the report
	// has none (no -payments).
	measure func(r *report) (v float64, ok bool)
}

// thresholdKinds are the thresholds loadgen offers, in the order the
// report lists them.
var thresholdKinds = []thresholdKind{
	{"max-overlaps", "overlaps", "OVERLAPS", "charges", true, "fail the run when the provider saw more than `N` overlapping charges (two lock holders at once); needs -payments",
		func(r *report) (float64, bool) { return paid(r, func(p *paymentCounts) int64 { return p.Overlaps }) }},
	{"max-refunds", "refunds", "REFUNDS", "charges", true, "fail the run when more than `N` charges were refunded; needs -payments",
		func(r *report) (float64, bool) { return paid(r, func(p *paymentCounts) int64 { return p.Refunds }) }},
	{"max-errors", "errors", "ERRORS", "requests", true, "fail the run when more than `N` requests were answered neither 201 nor 409 (or not at all)",
		func(r *report) (float64, bool) { return float64(r.Errors), true }},
	{"max-p99", "latency_ms.p99", "P99", "ms", true, "fail the run when the 99th percentile latency exceeds `DUR`",
		func(r *report) (float64, bool) { return r.LatencyMS.P99, true }},
	{"min-rps", "throughput_rps", "THROUGHPUT", "req/s", false, "fail the run when fewer than `N` requests a second were answered (throughput_rps)",
		func(r *report) (float64, bool) { return r.ThroughputRPS, true }},
}

// paid reads a payment figure, when the run had a provider.
func paid(r *report, f func(*paymentCounts) int64) (float64, bool) {
	if r.Payments == nil {
		return 0, false
	}
	return float64(f(r.Payments)), true
}

// thresholdSpec is a threshold given on the command line.
type thresholdSpec struct {
	kind  *thresholdKind
	limit float64 // in the kind's unit
}

// threshold is a threshold of the report: its limit, the figure measured
// and whether it passed.
type threshold struct {
	Flag     string  `json:"flag"`   // "-max-overlaps"
	Figure   string  `json:"figure"` // the report's field it limits
	Limit    float64 `json:"limit"`
	Measured float64 `json:"measured"`
	Unit     string  `json:"unit"`
	Passed   bool    `json:"passed"`

	kind *thresholdKind
}

// evaluate measures every threshold of specs on r.
func evaluate(specs []thresholdSpec, r *report) []threshold {
	var out []threshold
	for _, s := range specs {
		v, ok := s.kind.measure(r)
		t := threshold{Flag: "-" + s.kind.flag, Figure: s.kind.figure, Limit: s.limit, Measured: v, Unit: s.kind.unit, kind: s.kind}
		t.Passed = ok && (s.kind.max && v <= s.limit || !s.kind.max && v >= s.limit)
		out = append(out, t)
	}
	return out
}

// crossed reports whether a threshold on figure failed.
func (r *report) crossed(figure string) (threshold, bool) {
	for _, t := range r.Thresholds {
		if t.Figure == figure && !t.Passed {
			return t, true
		}
	}
	return threshold{}, false
}

// String is the threshold as given: "-max-p99 50ms".
func (t threshold) String() string {
	if t.Unit == "ms" {
		return t.Flag + " " + fmtMS(t.Limit)
	}
	return t.Flag + " " + strconv.FormatFloat(t.Limit, 'f', -1, 64)
}

// measured prints the figure measured, with its unit: "63.2ms", "8
// charges", "80.5 req/s".
func (t threshold) measured() string {
	switch t.Unit {
	case "ms":
		return fmtMS(t.Measured)
	case "req/s":
		return strconv.FormatFloat(t.Measured, 'f', 1, 64) + " req/s"
	}
	return plural(int64(t.Measured), strings.TrimSuffix(t.Unit, "s"))
}

// crossing names a crossed threshold in the verdict: "over -max-p99
// 50ms", "under -min-rps 100".
func (t threshold) crossing() string {
	if t.kind != nil && !t.kind.max {
		return "under " + t.String()
	}
	return "over " + t.String()
}

// line describes the threshold for the report: its limit, what was
// measured, and whether it passed.
func (t threshold) line() string {
	verdict := "passed"
	if !t.Passed {
		verdict = "CROSSED"
	}
	return fmt.Sprintf("%s: %s measured, %s", t, t.measured(), verdict)
}

// thresholdFlags declares the threshold flags on fs; specs returns the
// ones given, once fs is parsed.
func thresholdFlags(fs *flag.FlagSet) (specs func() []thresholdSpec) {
	values := make([]*thresholdValue, len(thresholdKinds))
	for i := range thresholdKinds {
		k := &thresholdKinds[i]
		values[i] = &thresholdValue{kind: k}
		fs.Var(values[i], k.flag, k.usage+" (default: no threshold)")
	}
	return func() []thresholdSpec {
		var out []thresholdSpec
		for _, v := range values {
			if v.set {
				out = append(out, thresholdSpec{kind: v.kind, limit: v.limit})
			}
		}
		return out
	}
}

// thresholdValue is the flag.Value of one threshold: a count, a rate, or
// a duration for latency, never negative.
type thresholdValue struct {
	kind  *thresholdKind
	limit float64
	set   bool
}

func (v *thresholdValue) String() string {
	if v == nil || !v.set {
		return ""
	}
	return strings.TrimPrefix(threshold{Unit: v.kind.unit, Limit: v.limit}.String(), " ")
}

func (v *thresholdValue) Set(s string) error {
	var limit float64
	switch v.kind.unit {
	case "ms":
		d, err := time.ParseDuration(s)
		if err != nil {
			return errors.New("want a duration such as 250ms")
		}
		limit = float64(d) / float64(time.Millisecond)
	case "req/s":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errors.New("want a number of requests a second")
		}
		limit = f
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return errors.New("want a whole number")
		}
		limit = float64(n)
	}
	if limit < 0 {
		return errors.New("must not be negative")
	}
	v.limit, v.set = limit, true
	return nil
}

// thresholdSummary is one line per threshold of a compare run: its limit,
// the strategies that crossed it with what they measured, and how many
// passed. Refused strategies did not run and are not counted.
func thresholdSummary(results []*report) []string {
	var flags []string
	crossed, passed := map[string][]string{}, map[string]int{}
	for _, r := range results {
		for _, t := range r.Thresholds {
			name := t.String()
			if _, ok := passed[name]; !ok {
				flags = append(flags, name)
				passed[name] = 0
			}
			if t.Passed {
				passed[name]++
			} else {
				crossed[name] = append(crossed[name], fmt.Sprintf("%s (%s)", runName(r), t.measured()))
			}
		}
	}
	var out []string
	for _, name := range flags {
		line := name + ": passed by " + plural(passed[name], "strategy")
		if len(crossed[name]) > 0 {
			line += "; CROSSED by " + strings.Join(crossed[name], ", ")
		}
		out = append(out, line)
	}
	return out
}
