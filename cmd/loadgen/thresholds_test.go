package main

import (
	"strings"
	"testing"
)

func TestThresholdFlags(t *testing.T) {
	env := func(string) string { return "" }
	pay := []string{"-payments", "http://127.0.0.1:9100"}
	for _, tc := range []struct {
		name  string
		args  []string
		flag  string  // the one threshold wanted, "" for none
		limit float64 // its limit
	}{
		{"none by default", nil, "", 0},
		{"max overlaps zero is a threshold", append([]string{"-max-overlaps", "0"}, pay...), "max-overlaps", 0},
		{"max refunds", append([]string{"-max-refunds", "16"}, pay...), "max-refunds", 16},
		{"max errors", []string{"-max-errors", "3"}, "max-errors", 3},
		{"max p99 in milliseconds", []string{"-max-p99", "1.5s"}, "max-p99", 1500},
		{"min rps", []string{"-min-rps", "12.5"}, "min-rps", 12.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseFlags("loadgen", tc.args, env, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.flag == "" && len(cfg.thresholds) != 0:
				t.Errorf("thresholds %+v, want none", cfg.thresholds)
			case tc.flag == "":
			case len(cfg.thresholds) != 1 || cfg.thresholds[0].kind.flag != tc.flag || cfg.thresholds[0].limit != tc.limit:
				t.Errorf("thresholds %+v, want -%s %v", cfg.thresholds, tc.flag, tc.limit)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		want string // in the message
	}{
		{"negative", []string{"-max-errors", "-1"}, "must not be negative"},
		{"not a number", []string{"-max-errors", "some"}, "whole number"},
		{"not a duration", []string{"-max-p99", "fast"}, "duration"},
		{"overlaps without a provider", []string{"-max-overlaps", "0"}, "-max-overlaps: needs -payments"},
		{"refunds without a provider", []string{"-max-refunds", "0"}, "-max-refunds: needs -payments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runLoadgen(t, nil, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// threshold builds the spec of the threshold named flag.
func thresholdOf(t *testing.T, flag string, limit float64) thresholdSpec {
	t.Helper()
	for i := range thresholdKinds {
		if thresholdKinds[i].flag == flag {
			return thresholdSpec{kind: &thresholdKinds[i], limit: limit}
		}
	}
	t.Fatalf("no threshold -%s", flag)
	return thresholdSpec{}
}

// A crossed threshold fails the run and is named in the verdict with the
// figure measured; one that passed changes nothing but is listed.
func TestThresholdsJudgeTheRun(t *testing.T) {
	harmed := func() *report {
		return &report{Scenario: scenarioMixed, Errors: 2, ThroughputRPS: 80.25, LatencyMS: latencies{P99: 63.2},
			Payments: &paymentCounts{Charges: 120, Refunds: 16, Overlaps: 8}}
	}
	for _, tc := range []struct {
		name    string
		specs   []thresholdSpec
		verdict string
		lines   []string // the report's threshold lines
	}{
		{"none", nil, "HARMED: OVERLAPS (8 charges), REFUNDS (16 charges), ERRORS (2 requests); exit status 0", nil},
		{"max overlaps crossed", []thresholdSpec{thresholdOf(t, "max-overlaps", 0)},
			"FAILED: OVERLAPS (8 charges, over -max-overlaps 0); also REFUNDS (16 charges), ERRORS (2 requests); exit status 1",
			[]string{"-max-overlaps 0: 8 charges measured, CROSSED"}},
		{"max refunds passed", []thresholdSpec{thresholdOf(t, "max-refunds", 16)},
			"HARMED: OVERLAPS (8 charges), REFUNDS (16 charges), ERRORS (2 requests); exit status 0",
			[]string{"-max-refunds 16: 16 charges measured, passed"}},
		{"max errors crossed", []thresholdSpec{thresholdOf(t, "max-errors", 1)},
			"FAILED: ERRORS (2 requests, over -max-errors 1); also OVERLAPS (8 charges), REFUNDS (16 charges); exit status 1",
			[]string{"-max-errors 1: 2 requests measured, CROSSED"}},
		{"max p99 crossed", []thresholdSpec{thresholdOf(t, "max-p99", 50)},
			"FAILED: P99 (63.2ms, over -max-p99 50ms); also OVERLAPS (8 charges), REFUNDS (16 charges), ERRORS (2 requests); exit status 1",
			[]string{"-max-p99 50ms: 63.2ms measured, CROSSED"}},
		{"min rps crossed", []thresholdSpec{thresholdOf(t, "min-rps", 100)},
			"FAILED: THROUGHPUT (80.2 req/s, under -min-rps 100); also OVERLAPS (8 charges), REFUNDS (16 charges), ERRORS (2 requests); exit status 1",
			[]string{"-min-rps 100: 80.2 req/s measured, CROSSED"}},
		{"min rps passed", []thresholdSpec{thresholdOf(t, "min-rps", 80)}, "", []string{"-min-rps 80: 80.2 req/s measured, passed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := harmed()
			r.judge(tc.specs)
			if got := r.verdictLine(); tc.verdict != "" && got != tc.verdict {
				t.Errorf("verdict %q\nwant    %q", got, tc.verdict)
			}
			var lines []string
			for _, th := range r.Thresholds {
				lines = append(lines, th.line())
			}
			if strings.Join(lines, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("threshold lines %q, want %q", lines, tc.lines)
			}
		})
	}
}

// Against the fake API: a crossed threshold is exit status 1 and is
// listed in the text report; compare fails only for a safe strategy.
func TestThresholdsEndToEnd(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{failConflicts: 4, demo: true})
	args := []string{"-targets", url, "-seats", "2", "-clients", "4", "-requests", "50"}
	t.Run("crossed: exit 1", func(t *testing.T) {
		code, stdout, stderr := runLoadgen(t, nil, append(args, "-max-errors", "0")...)
		if code != 1 || !strings.Contains(stderr, "over -max-errors 0") {
			t.Errorf("exit %d, stderr %q; want 1 naming the threshold", code, stderr)
		}
		if !strings.Contains(stdout, "-max-errors 0: ") || !strings.Contains(stdout, "measured, CROSSED") {
			t.Errorf("the report does not list the threshold:\n%s", stdout)
		}
	})
	t.Run("passed: exit 0, listed", func(t *testing.T) {
		code, stdout, stderr := runLoadgen(t, nil, append(args, "-max-errors", "1000", "-json")...)
		if code != 0 {
			t.Fatalf("exit %d; stderr %s", code, stderr)
		}
		ts := decodeReport(t, stdout)["thresholds"].([]any)
		if th := ts[0].(map[string]any); len(ts) != 1 || th["flag"] != "-max-errors" || th["limit"] != 1000.0 || th["passed"] != true {
			t.Errorf("thresholds %v", ts)
		}
	})
	t.Run("compare: only safe strategies fail it", func(t *testing.T) {
		code, stdout, stderr := runLoadgen(t, nil, append([]string{"compare", "-max-errors", "0"}, args...)...)
		if code != 1 || !strings.Contains(stderr, "keyed+redis/fence (ERRORS") || strings.Contains(stderr, "none/off") {
			t.Errorf("exit %d, stderr %q; want 1 naming the safe strategies only", code, stderr)
		}
		// The fake's unsafe strategies write blindly: no conflict, so none
		// of its errors.
		if !strings.Contains(stdout, "threshold -max-errors 0: passed by 4 strategies; CROSSED by global/fence (") {
			t.Errorf("the table does not list the threshold:\n%s", stdout)
		}
	})
}
