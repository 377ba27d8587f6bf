package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
)

func TestBucketSize(t *testing.T) {
	for _, tc := range []struct {
		wall, want time.Duration
	}{
		{0, 250 * time.Millisecond},
		{2 * time.Second, 250 * time.Millisecond},
		{15 * time.Second, 250 * time.Millisecond},
		{16 * time.Second, 500 * time.Millisecond},
		{time.Minute, time.Second},
		{10 * time.Minute, 10 * time.Second},
	} {
		if got := bucketSize(tc.wall); got != tc.want {
			t.Errorf("bucketSize(%v) = %v, want %v", tc.wall, got, tc.want)
		}
	}
}

func TestNewTimeline(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec := func(done time.Duration, status int) record {
		return record{intended: done - ms(10), sent: done - ms(10), done: done, answer: answer{status: status}}
	}
	// A slow answer counts where it came, not where it was sent.
	slow := rec(ms(300), http.StatusServiceUnavailable)
	slow.intended, slow.sent = ms(100), ms(100)
	records := []record{
		rec(ms(100), http.StatusCreated), rec(ms(200), http.StatusConflict),
		slow, rec(ms(400), 0), rec(ms(450), http.StatusInternalServerError),
		rec(ms(1990), http.StatusCreated),
	}
	samples := []overlapSample{{-ms(5), 5}, {ms(600), 7}, {ms(700), 7}, {ms(2000), 10}}
	tl := newTimeline(records, 2*time.Second, samples, nil)
	if tl.BucketS != 0.25 || len(tl.Buckets) != 8 {
		t.Fatalf("%v s x %d buckets, want 0.25 s x 8", tl.BucketS, len(tl.Buckets))
	}
	type counts struct{ req, ok, conflicts, e503, other, overlaps int }
	want := map[int]counts{0: {2, 1, 1, 0, 0, 0}, 1: {3, 0, 0, 1, 2, 0}, 2: {0, 0, 0, 0, 0, 2}, 7: {1, 1, 0, 0, 0, 3}}
	for i, b := range tl.Buckets {
		got := counts{b.Requests, b.Succeeded, b.Conflicts, b.Errors503, b.ErrorsOther, int(*b.Overlaps)}
		if got != want[i] {
			t.Errorf("bucket %d: %+v, want %+v", i, got, want[i])
		}
		if b.StartS != float64(i)*0.25 {
			t.Errorf("bucket %d starts at %v", i, b.StartS)
		}
	}
	if got := tl.Buckets[0].ThroughputRPS; got != 8 {
		t.Errorf("throughput of bucket 0 = %v, want 8 (2 answers in 0.25 s)", got)
	}
	if got := tl.Buckets[0].P99MS; got != 10 {
		t.Errorf("p99 of bucket 0 = %v ms, want 10", got)
	}
	if newTimeline(records, 2*time.Second, nil, nil).Buckets[0].Overlaps != nil {
		t.Error("a run without a payment provider has overlaps")
	}
}

func TestFaultWindows(t *testing.T) {
	start := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	line := func(name string, from, to time.Duration) string {
		l := fmt.Sprintf(`{"name":%q,"start":%q`, name, start.Add(from).Format(time.RFC3339Nano))
		if to != 0 {
			l += fmt.Sprintf(`,"end":%q`, start.Add(to).Format(time.RFC3339Nano))
		}
		return l + "}"
	}
	write := func(t *testing.T, lines ...string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "faults.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("clipped to the run, others' faults left out", func(t *testing.T) {
		path := write(t,
			line("earlier run", -time.Hour, -time.Hour+time.Second), "",
			line("redis down", 1250*time.Millisecond, 2500*time.Millisecond),
			line("began before", -time.Second, 500*time.Millisecond),
			line("still going", 3*time.Second, 0))
		got, err := faultWindows(path, start, 4*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want := []faultWindow{{"redis down", 1.25, 2.5}, {"began before", 0, 0.5}, {"still going", 3, 4}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("windows %v, want %v", got, want)
		}
	})
	for _, tc := range []struct{ name, line, want string }{
		{"not JSON", "redis down 08:00", ":1: invalid character"},
		{"no start", `{"name":"x"}`, ":1: a fault needs a name and a start"},
		{"not RFC 3339", `{"name":"x","start":"08:00"}`, ":1: parsing time"},
		{"ends before it starts", line("x", time.Second, 1), `:1: "x" ends before it starts`},
		{"unknown field", `{"name":"x","start":"2026-11-25T08:00:00Z","stop":"2026-11-25T08:00:01Z"}`, `unknown field "stop"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := write(t, tc.line)
			if _, err := faultWindows(path, start, time.Second); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
			// A file that exists is checked before the run.
			if code, _, stderr := runLoadgen(t, nil, "-faults", path); code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 with %q", code, stderr, tc.want)
			}
		})
	}
}

// TestTimelineAgainstFakeAPI runs loadgen for a second while the test
// marks a fault window in the -faults file, as a fault injector would,
// and reads the timeline back from the JSON, the text and the HTML report.
func TestTimelineAgainstFakeAPI(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{})
	dir := t.TempDir()
	faults := filepath.Join(dir, "faults.jsonl")
	if err := os.WriteFile(faults, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	marked := make(chan error, 1)
	go func() {
		time.Sleep(400 * time.Millisecond)
		from := time.Now()
		time.Sleep(400 * time.Millisecond)
		line, _ := json.Marshal(faultLine{Name: "pretend outage", Start: from, End: time.Now()})
		f, err := os.OpenFile(faults, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
			f.Close()
		}
		marked <- err
	}()
	htmlFile := filepath.Join(dir, "run.html")
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread", "-clients", "4", "-rate", "200",
		"-duration", "1500ms", "-faults", faults, "-json", "-html", htmlFile)
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	tl := rep.Timeline
	// 1.5 s of sending is 6 buckets of 0.25 s; an answer that a loaded
	// machine delays past the end may open one more.
	if tl == nil || tl.BucketS != 0.25 || len(tl.Buckets) < 6 {
		t.Fatalf("timeline %+v, want at least 6 buckets of 0.25 s", tl)
	}
	sum := 0
	for _, b := range tl.Buckets {
		sum += b.Requests
		if b.Requests == 0 || b.Succeeded != b.Requests {
			t.Errorf("bucket at %vs: %d requests, %d confirmed; want some, all confirmed", b.StartS, b.Requests, b.Succeeded)
		}
	}
	if sum != rep.Requests {
		t.Errorf("the buckets hold %d requests, the run %d", sum, rep.Requests)
	}
	// The window's place depends on when the marker's sleeps end, which
	// load stretches: it must lie inside the run and last the 0.4 s
	// between its marks at least.
	if len(tl.Faults) != 1 || tl.Faults[0].Name != "pretend outage" ||
		tl.Faults[0].StartS <= 0 || tl.Faults[0].EndS > float64(len(tl.Buckets))*tl.BucketS || tl.Faults[0].EndS-tl.Faults[0].StartS < 0.35 {
		t.Fatalf("faults %+v, want one window of at least 0.4 s inside the run", tl.Faults)
	}

	t.Run("html shades the window over the buckets it covers", func(t *testing.T) {
		b, err := os.ReadFile(htmlFile)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		m := regexp.MustCompile(`<rect class="fault" data-fault="pretend outage" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no shaded fault window")
		}
		fx, _ := strconv.ParseFloat(m[1], 64)
		fw, _ := strconv.ParseFloat(m[2], 64)
		bars := regexp.MustCompile(`<rect class="bucket" data-panel="throughput" data-series="confirmed" data-bucket="(\d+)" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindAllStringSubmatch(page, -1)
		if len(bars) != len(tl.Buckets) {
			t.Fatalf("%d throughput bars, want %d", len(bars), len(tl.Buckets))
		}
		f := tl.Faults[0]
		for _, bar := range bars {
			i, _ := strconv.Atoi(bar[1])
			x, _ := strconv.ParseFloat(bar[2], 64)
			w, _ := strconv.ParseFloat(bar[3], 64)
			from, to := float64(i)*tl.BucketS, float64(i+1)*tl.BucketS
			inside := x >= fx-0.5 && x+w <= fx+fw+0.5
			outside := x+w <= fx+0.5 || x >= fx+fw-0.5
			switch {
			case from >= f.StartS && to <= f.EndS && !inside:
				t.Errorf("bucket %d (%.2f-%.2fs) lies in the window but its bar %.1f+%.1f is not under the shade %.1f+%.1f", i, from, to, x, w, fx, fw)
			case (to <= f.StartS || from >= f.EndS) && !outside:
				t.Errorf("bucket %d (%.2f-%.2fs) lies outside the window but its bar %.1f+%.1f is under the shade %.1f+%.1f", i, from, to, x, w, fx, fw)
			}
		}
	})

	t.Run("text marks the buckets of the window", func(t *testing.T) {
		var text strings.Builder
		if err := writeText(&text, &rep); err != nil {
			t.Fatal(err)
		}
		marked := regexp.MustCompile(`(?m)^\s*([0-9.]+)s\s.*pretend outage\s*$`).FindAllStringSubmatch(text.String(), -1)
		if len(marked) < 2 || len(marked) > 3 {
			t.Errorf("%d rows marked with the fault, want the 2 or 3 buckets it overlaps:\n%s", len(marked), text.String())
		}
		for _, m := range marked {
			s, _ := strconv.ParseFloat(m[1], 64)
			if s+tl.BucketS <= tl.Faults[0].StartS || s >= tl.Faults[0].EndS {
				t.Errorf("bucket at %vs marked, outside the window %+v", s, tl.Faults[0])
			}
		}
	})
}

// The overlaps of a run are put in the bucket in which a poll of the
// provider saw them, not all at the end: a real provider, two charges for
// one seat at once 100 ms into a 500 ms run.
func TestStatsPollerPlacesOverlaps(t *testing.T) {
	provider := payment.NewProvider(payment.ProviderOptions{})
	srv := httptest.NewServer(provider.Handler())
	t.Cleanup(srv.Close)
	c := newClient(1, 1, time.Second, "")
	t.Cleanup(c.close)

	start := time.Now()
	poller := pollStats(context.Background(), c, srv.URL)
	time.Sleep(100 * time.Millisecond)
	var pending []*payment.Pending
	for i := range 2 {
		p, err := provider.Begin(payment.ChargeRequest{BookingID: fmt.Sprint(i), ScreeningID: "s", Seats: []string{"A1"}, Customer: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		pending = append(pending, p)
	}
	for _, p := range pending {
		provider.Finish(p, true)
	}
	time.Sleep(400 * time.Millisecond)
	poller.stop()
	wall := time.Since(start)

	samples := poller.overlapSamples(start, overlapSample{at: 0, overlaps: 0}, overlapSample{at: wall, overlaps: provider.Stats().Overlaps})
	tl := newTimeline(nil, wall, samples, nil)
	if got := *tl.Buckets[0].Overlaps; got != 1 {
		t.Errorf("bucket 0 (0-250 ms) has %d overlaps, want the 1 that began at 100 ms; samples %v", got, samples)
	}
}
