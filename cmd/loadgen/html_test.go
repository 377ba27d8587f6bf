package main

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
		if !strings.Contains(page, `<p class="verdict clean"><strong>result: CLEAN</strong>`) {
			t.Error("the report has no verdict line")
		}
		if !strings.Contains(page, "Closed loop") || strings.Contains(page, "intended send time") {
			t.Error("a closed-loop report must say latency counts from the send, not from an intended send time")
		}
	})

	t.Run("one unsafe run: the verdict says what failed", func(t *testing.T) {
		f := &fakeAPI{}
		f.doubleBook.Store(true)
		code, _, _ := runLoadgen(t, nil, "-targets", newFakeAPI(t, f), "-seats", "2", "-clients", "4", "-requests", "50", "-html", filepath.Join(dir, "unsafe.html"))
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		if page := read(t, "unsafe.html"); !regexp.MustCompile(`<p class="verdict failed"><strong>result: FAILED: DOUBLE-BOOKED \(2 seats\), LOST`).MatchString(page) {
			t.Error("the verdict line does not say what failed")
		}
	})

	t.Run("open loop: latency from the intended send time", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread", "-rate", "500", "-clients", "4", "-requests", "50", "-html", filepath.Join(dir, "open.html"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if page := read(t, "open.html"); !strings.Contains(page, "intended send time") || strings.Contains(page, "Closed loop") {
			t.Error("an open-loop report must say latency counts from the intended send time")
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
		if n := strings.Count(page, `<svg class="timeline"`); n != len(compareStrategies()) {
			t.Errorf("%d timelines, want one per strategy (%d)", n, len(compareStrategies()))
		}
		for _, chart := range []string{"confirmed bookings", "double-booked seats", "throughput (req/s)", "parallelism"} {
			m := regexp.MustCompile(`(?s)data-chart="` + regexp.QuoteMeta(chart) + `".*?</svg>`).FindString(page)
			if bars := strings.Count(m, "<rect"); bars != len(compareStrategies()) {
				t.Errorf("chart %q has %d bars, want one per strategy (%d)", chart, bars, len(compareStrategies()))
			}
		}
	})

	t.Run("compare: a colour per strategy, labels that fit", func(t *testing.T) {
		page := read(t, "compare.html")
		colours := map[string]string{}
		for _, m := range regexp.MustCompile(`class="series" data-series="([^"]*)" fill="none" stroke="([^"]*)"`).FindAllStringSubmatch(page, -1) {
			if other, ok := colours[m[2]]; ok {
				t.Errorf("%s and %s share the colour %s", other, m[1], m[2])
			}
			colours[m[2]] = m[1]
		}
		if len(colours) != len(compareStrategies()) {
			t.Errorf("%d colours for %d strategies", len(colours), len(compareStrategies()))
		}
		// 6.5 px is about the average width of a character of an 11 px
		// sans-serif font: a label must fit inside its chart at that.
		const charPx = 6.5
		svgs := regexp.MustCompile(`(?s)<svg[^>]* width="(\d+)".*?</svg>`).FindAllStringSubmatch(page, -1)
		labels := regexp.MustCompile(`<text class="label" x="([0-9.]+)"[^>]*?( text-anchor="end")?>([^<]*)</text>`)
		checked := 0
		for _, svg := range svgs {
			width, _ := strconv.ParseFloat(svg[1], 64)
			for _, m := range labels.FindAllStringSubmatch(svg[0], -1) {
				x, _ := strconv.ParseFloat(m[1], 64)
				w := charPx * float64(len(html.UnescapeString(m[3])))
				left, right := x, x+w
				if m[2] != "" {
					left, right = x-w, x
				}
				if left < 0 || right > width {
					t.Errorf("label %q spans %.0f to %.0f px, outside its chart (0 to %.0f)", m[3], left, right, width)
				}
				checked++
			}
		}
		if checked < 5*len(compareStrategies()) {
			t.Errorf("checked %d labels; cannot read the charts", checked)
		}
	})

	t.Run("an unwritable file is an error", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, "-targets", url, "-requests", "10", "-html", filepath.Join(dir, "missing", "x.html"))
		if code != 2 || !strings.Contains(stderr, "-html") {
			t.Errorf("exit %d, stderr %q; want 2 naming -html", code, stderr)
		}
	})
}

// A run that harmed customers is not shown green, and names every harm.
func TestHTMLHarmedRun(t *testing.T) {
	rep := &report{Scenario: scenarioMixed, Strategy: "keyed", Guard: "fence", Payments: &paymentCounts{Charges: 120, Refunds: 16, Overlaps: 8}}
	rep.judge(nil)
	var page strings.Builder
	if err := writeHTML(&page, "harmed", []*report{rep}); err != nil {
		t.Fatal(err)
	}
	want := `<p class="verdict harmed"><strong>result: HARMED: OVERLAPS (8 charges), REFUNDS (16 charges); exit status 0</strong>`
	if !strings.Contains(page.String(), want) {
		t.Errorf("the page lacks %s", want)
	}
	if n := strings.Count(page.String(), "Clean means"); n != 1 {
		t.Errorf("the page says what clean means %d times, want once", n)
	}
}

// The HTML of compare with payments: refunds beside overlaps, rows of one
// line, and no exit status it did not have.
func TestHTMLCompareWithPayments(t *testing.T) {
	file := filepath.Join(t.TempDir(), "paid.html")
	pay, charges := newProvider(t)
	paid := newFakeAPI(t, &fakeAPI{charges: charges})
	code, _, stderr := runLoadgen(t, nil, "compare", "-targets", paid, "-payments", pay, "-seats", "2", "-clients", "4", "-requests", "40",
		"-html", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	pair := regexp.MustCompile(`(?s)<div class="pair">\s*<svg class="bars" data-chart="overlapping charges[^"]*".*?</svg>\s*<svg class="bars" data-chart="refunds[^"]*".*?</svg>\s*</div>`)
	if !pair.MatchString(page) {
		t.Error("no refunds chart beside the overlaps chart")
	}
	if strings.Contains(page, "exit status") {
		t.Error("a compare that exited 0 shows an exit status")
	}
	// Every row of the runs table has as many cells as the header,
	// refused or not, and no cell spans columns.
	table := regexp.MustCompile(`(?s)<table class="runs">.*?</table>`).FindString(page)
	rows := regexp.MustCompile(`<tr>.*</tr>`).FindAllString(table, -1)
	if len(rows) != len(compareStrategies())+1 || strings.Contains(table, "colspan") {
		t.Fatalf("%d rows, want a header and %d strategies, none spanning columns:\n%s", len(rows), len(compareStrategies()), table)
	}
	want := strings.Count(rows[0], "<th>")
	for _, row := range rows[1:] {
		if n := strings.Count(row, "<td"); n != want {
			t.Errorf("%d cells, want %d: %s", n, want, row)
		}
	}
	if !strings.Contains(page, `refused <sup>[1]</sup>`) || !strings.Contains(page, "<li>refused: server not in demo mode</li>") {
		t.Error("refused strategies do not point at a note that says why")
	}
}
