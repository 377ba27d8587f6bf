package main

import (
	"strings"
	"testing"
)

// wideResults are compare results at their widest: every strategy, long
// refusals, every harm at once, seven-digit counts and slow latencies.
func wideResults() []*report {
	long := "the server has no backend for this strategy: set ZOOKEEPER_SERVERS to a comma-separated list of host:port " +
		"addresses of a ZooKeeper ensemble, or LOCK_DIR to a directory every instance of the API shares, and start the " +
		"instances again; see docs/backends.md for what each backend needs and what it costs"
	var out []*report
	for i, s := range compareStrategies() {
		r := &report{Scenario: scenarioMixed, Strategy: s.lock, Guard: s.guard}
		switch {
		case i%3 == 0:
			r.Refused = long + strings.Repeat(" and more", i)
		default:
			r.Succeeded, r.Errors, r.Conflicts = 1234567, 1234567, 9876543
			r.counts = counts{DoubleBookedSeats: 2600, LostBookings: 1234567, PhantomSeatsContradicted: 7}
			r.ThroughputRPS, r.Parallelism = 1234567.8, 63.99
			r.LatencyMS = latencies{P50: 12345.678, P99: 61234.567}
			r.Linearizable, r.NonLinearizableSeats = notLinearizable, []string{"a/A1", "a/A2"}
			r.Payments = &paymentCounts{Charges: 99999, Refunds: 1234567, Overlaps: 1234567, RefusedStale: 66666, Confirmed: 5, LedgerDiff: 11106,
				Ledger: "charges 99999 − refunds 88888 = 11111, confirmed bookings 5: 11106 charges nobody booked or refunded (after waiting 30s)"}
			r.judge([]thresholdSpec{{kind: &thresholdKinds[0], limit: 0}, {kind: &thresholdKinds[3], limit: 50}})
		}
		out = append(out, r)
	}
	return out
}

// The default table fits 120 columns however long a refusal or a verdict
// is, and loses nothing: what does not fit a row is in a note.
func TestCompareTableFits120Columns(t *testing.T) {
	results := wideResults()
	var b strings.Builder
	if err := writeCompare(&b, results, false, results[1].cleanMeans()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for i, line := range strings.Split(text, "\n") {
		if n := len([]rune(line)); n > tableWidth {
			t.Errorf("line %d is %d columns wide, want at most %d: %q", i+1, n, tableWidth, line)
		}
	}
	joined := strings.Join(strings.Fields(text), " ")
	for _, r := range results {
		want := r.Refused
		if want == "" {
			want = runName(r) + ": " + r.verdict()
		}
		if !strings.Contains(joined, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the notes lack %q", want)
		}
	}
	if !strings.Contains(text, "FAILED [2]") || !strings.Contains(text, "refused [1]") {
		t.Errorf("the verdict column does not point at the notes:\n%s", text)
	}
	if !strings.Contains(text, "left out to fit 120 columns: -wide shows every column") {
		t.Errorf("the table does not say which columns it left out:\n%s", text)
	}
}

// With the figures of a real run every column fits.
func TestCompareTableKeepsEveryColumnOfARealRun(t *testing.T) {
	results := wideResults()
	for _, r := range results {
		if r.Refused == "" {
			r.Succeeded, r.Errors, r.DoubleBookedSeats, r.LostBookings = 2000, 120, 26, 48
			r.Payments.Overlaps, r.Payments.Refunds = 400, 400
			r.ThroughputRPS, r.LatencyMS.P99 = 4321.5, 999.994
		}
	}
	var b strings.Builder
	if err := writeCompare(&b, results, false, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, col := range narrowColumns {
		if !strings.Contains(lines[0], col.head) {
			t.Errorf("the header %q lacks %s", lines[0], col.head)
		}
	}
	if w := maxWidth(b.String()); w > tableWidth {
		t.Errorf("%d columns wide, want at most %d:\n%s", w, tableWidth, b.String())
	}
}

// -wide puts everything on the row.
func TestCompareTableWide(t *testing.T) {
	results := wideResults()
	var b strings.Builder
	if err := writeCompare(&b, results, true, ""); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, r := range results {
		want := r.verdict()
		if r.Refused != "" {
			want = "refused: " + r.Refused
		}
		if !strings.HasSuffix(lines[i+1], want) {
			t.Errorf("row %d %q does not end with its verdict %q", i+1, lines[i+1], want)
		}
	}
	if !strings.Contains(lines[0], "LEDGER") || !strings.Contains(lines[2], "+11106") || !strings.Contains(lines[0], "PARALLELISM") {
		t.Errorf("the wide table lacks the ledger:\n%s", b.String())
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		text  string
		width int
		want  []string
	}{
		{"a b c", 0, []string{"a b c"}},
		{"aa bb cc dd", 5, []string{"aa bb", "  cc", "  dd"}},
		{"averylongword b", 5, []string{"averylongword", "  b"}},
	} {
		got := wrap(tc.text, tc.width, "  ")
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}
