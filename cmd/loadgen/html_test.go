package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHTMLReport runs loadgen and compare with -html against the fake API
// and checks that each file is written, self-contained, and holds the
// expected series and charts.
func TestHTMLReport(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{demo: true})
	dir := t.TempDir()
	read := func(t *testing.T, name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("no report: %v", err)
		}
		page := string(b)
		if strings.Contains(page, "<script") || regexp.MustCompile(`(src|href)="http`).MatchString(page) {
			t.Errorf("report is not self-contained")
		}
		return page
	}
	// points counts the points of a series' polyline.
	points := func(page, series string) int {
		m := regexp.MustCompile(`data-series="` + regexp.QuoteMeta(series) + `"[^>]*points="([^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			return 0
		}
		return len(strings.Fields(m[1]))
	}

	t.Run("one run: a latency curve", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, "-targets", url, "-clients", "4", "-requests", "100", "-lock", "keyed", "-html", filepath.Join(dir, "run.html"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		page := read(t, "run.html")
		if n := points(page, "keyed/fence"); n != len(curveQuantiles) {
			t.Errorf("keyed/fence curve has %d points, want %d", n, len(curveQuantiles))
		}
		if strings.Contains(page, `class="bars"`) {
			t.Error("a single run has compare bar charts")
		}
	})

	t.Run("compare: a curve per strategy and four bar charts", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, "compare", "-targets", url, "-seats", "2", "-clients", "4", "-requests", "40", "-html", filepath.Join(dir, "compare.html"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		page := read(t, "compare.html")
		for _, s := range compareStrategies() {
			if n := points(page, s.lock+"/"+s.guard); n != len(curveQuantiles) {
				t.Errorf("%s/%s curve has %d points, want %d", s.lock, s.guard, n, len(curveQuantiles))
			}
		}
		for _, chart := range []string{"confirmed bookings", "double-booked seats", "throughput (req/s)", "parallelism"} {
			m := regexp.MustCompile(`(?s)data-chart="` + regexp.QuoteMeta(chart) + `".*?</svg>`).FindString(page)
			if bars := strings.Count(m, "<rect"); bars != len(compareStrategies()) {
				t.Errorf("chart %q has %d bars, want one per strategy (%d)", chart, bars, len(compareStrategies()))
			}
		}
	})

	t.Run("an unwritable file is an error", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, "-targets", url, "-requests", "10", "-html", filepath.Join(dir, "missing", "x.html"))
		if code != 2 || !strings.Contains(stderr, "-html") {
			t.Errorf("exit %d, stderr %q; want 2 naming -html", code, stderr)
		}
	})
}
