package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// The run over time. The totals of a report hide what a fault does: a
// Redis that stops for a second shows as a few hundred errors among
// thousands of answers. The timeline cuts the run into buckets of its wall
// time and shows, per bucket, throughput, latency, errors by kind and (with
// -payments) overlapping charges, with the window of every fault marked,
// the way Jepsen's plots shade the nemesis: the outage, the recovery, and
// where the lock broke, side by side.
//
// loadgen injects no fault itself. Whoever does (a test, a lab script, a
// person) appends one line of JSON per fault to the file named by -faults:
//
//	{"name":"redis down","start":"2026-11-25T07:50:01.25Z","end":"2026-11-25T07:50:02.5Z"}
//
// and loadgen reads it after the run. A file is the simplest thing that a
// shell script (echo >>) and a Go test can both write, and that survives
// loadgen being started after the fault was.

// timeline is the report's "timeline" field.
type timeline struct {
	BucketS float64       `json:"bucket_s"` // width of every bucket, in seconds
	Buckets []bucket      `json:"buckets"`
	Faults  []faultWindow `json:"faults,omitempty"`
}

// bucket counts the requests answered (or given up on) during
// [start_s, start_s + bucket_s) of the run.
type bucket struct {
	StartS        float64 `json:"start_s"`
	Requests      int     `json:"requests"`
	Succeeded     int     `json:"succeeded"`    // 201
	Conflicts     int     `json:"conflicts"`    // 409
	Errors503     int     `json:"errors_503"`   // 503: a backend out, nothing booked
	ErrorsOther   int     `json:"errors_other"` // anything else: no answer, 500, other 4xx
	ThroughputRPS float64 `json:"throughput_rps"`
	P50MS         float64 `json:"p50_ms"`
	P99MS         float64 `json:"p99_ms"`
	// Overlaps are the charges that began while another for the same
	// seat was in progress, as the provider's counts grew between two
	// polls; only with -payments.
	Overlaps *int64 `json:"overlaps,omitempty"`
	// Waiting are the buyers in the waiting room at the end of the
	// bucket, and Admitted those admitted during it; only in onsale on a
	// screening with a waiting room.
	Waiting  *int `json:"waiting,omitempty"`
	Admitted *int `json:"admitted,omitempty"`
}

// faultWindow is a fault as an interval of the run, in seconds from its
// start, clipped to the run.
type faultWindow struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// faultsDuring names the faults whose window overlaps bucket b.
func (tl *timeline) faultsDuring(b bucket) []string {
	var names []string
	for _, f := range tl.Faults {
		if f.StartS < b.StartS+tl.BucketS && f.EndS > b.StartS {
			names = append(names, f.Name)
		}
	}
	return names
}

// bucketSizes are the widths a timeline may use: the smallest that cuts the
// run into at most maxBuckets is chosen.
var bucketSizes = []time.Duration{
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

const maxBuckets = 60

// bucketSize picks the width of the buckets of a run that lasted wall.
func bucketSize(wall time.Duration) time.Duration {
	for _, d := range bucketSizes {
		if wall <= d*maxBuckets {
			return d
		}
	}
	return wall / maxBuckets
}

// overlapSample is the provider's overlap count, read at a moment of the
// run (an offset from its start).
type overlapSample struct {
	at       time.Duration
	overlaps int64
}

// newTimeline cuts the records of a run that lasted wall into buckets.
// samples (nil without -payments) are the provider's overlap counts in the
// order they were read, the first before the run and the last after it:
// each increase is put in the bucket in which it was seen.
func newTimeline(records []record, wall time.Duration, samples []overlapSample, faults []faultWindow) *timeline {
	size := bucketSize(wall)
	n := max(int((wall+size-1)/size), 1)
	tl := &timeline{BucketS: size.Seconds(), Buckets: make([]bucket, n), Faults: faults}
	at := func(d time.Duration) int { return min(max(int(d/size), 0), n-1) }

	latencies := make([][]time.Duration, n)
	for i := range records {
		r := &records[i]
		b := &tl.Buckets[at(r.done)]
		b.Requests++
		switch {
		case r.confirmed():
			b.Succeeded++
		case r.status == http.StatusConflict:
			b.Conflicts++
		case r.status == http.StatusServiceUnavailable:
			b.Errors503++
		default:
			b.ErrorsOther++
		}
		latencies[at(r.done)] = append(latencies[at(r.done)], r.latency())
	}
	for i := range tl.Buckets {
		b := &tl.Buckets[i]
		b.StartS = (time.Duration(i) * size).Seconds()
		// The last bucket is cut short by the end of the run.
		width := min(size, wall-time.Duration(i)*size)
		if width > 0 {
			b.ThroughputRPS = float64(b.Requests) / width.Seconds()
		}
		b.P50MS, b.P99MS = quantileMS(latencies[i], 0.50), quantileMS(latencies[i], 0.99)
	}
	if samples != nil {
		for i := range tl.Buckets {
			tl.Buckets[i].Overlaps = new(int64)
		}
		for i := 1; i < len(samples); i++ {
			*tl.Buckets[at(samples[i].at)].Overlaps += samples[i].overlaps - samples[i-1].overlaps
		}
	}
	return tl
}

// quantileMS is the q-quantile (nearest rank) of ds in milliseconds; 0
// for none.
func quantileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := min(int(q*float64(len(ds))), len(ds)-1)
	return float64(ds[i].Microseconds()) / 1000
}

// statsPollInterval is how often the provider's counts are read during a
// run: fine enough for a 250 ms bucket, and a cheap GET on loopback.
const statsPollInterval = 100 * time.Millisecond

// statsPoller reads the payment provider's overlap count every
// statsPollInterval, from start until stop. A poll that fails (the
// provider may be the fault) is skipped: the next one catches up.
type statsPoller struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the polling goroutine returns

	// samples is written only by the polling goroutine and read only
	// after done is closed.
	samples []struct {
		at       time.Time
		overlaps int64
	}
}

// pollStats starts polling url's /v1/stats with c. The goroutine it starts
// is owned by the poller: stop ends it and waits for it.
func pollStats(ctx context.Context, c *client, url string) *statsPoller {
	ctx, cancel := context.WithCancel(ctx)
	p := &statsPoller{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(statsPollInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			pctx, cancelPoll := context.WithTimeout(ctx, time.Second)
			s, err := c.paymentStats(pctx, url)
			cancelPoll()
			if err == nil {
				p.samples = append(p.samples, struct {
					at       time.Time
					overlaps int64
				}{time.Now(), s.Overlaps})
			}
		}
	}()
	return p
}

// stop ends the polling and waits for it.
func (p *statsPoller) stop() {
	p.cancel()
	<-p.done
}

// overlapSamples returns what stop left, as offsets from start, between
// the counts read before and after the run. Call it after stop.
func (p *statsPoller) overlapSamples(start time.Time, before, after overlapSample) []overlapSample {
	out := []overlapSample{before}
	for _, s := range p.samples {
		out = append(out, overlapSample{at: s.at.Sub(start), overlaps: s.overlaps})
	}
	return append(out, after)
}

// faultLine is one line of a -faults file.
type faultLine struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"` // RFC 3339, fractions of seconds allowed
	End   time.Time `json:"end"`   // zero (left out): still going at the end of the run
}

// readFaults reads a -faults file: one faultLine per line, blank lines
// ignored. It says which line is wrong, and how.
func readFaults(path string) ([]faultLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-faults: %w", err)
	}
	defer f.Close()
	var out []faultLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var l faultLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		switch err := dec.Decode(&l); {
		case err != nil:
			return nil, fmt.Errorf("-faults %s:%d: %w (want {\"name\":...,\"start\":RFC3339,\"end\":RFC3339})", path, n, err)
		case l.Name == "" || l.Start.IsZero():
			return nil, fmt.Errorf("-faults %s:%d: a fault needs a name and a start", path, n)
		case !l.End.IsZero() && l.End.Before(l.Start):
			return nil, fmt.Errorf("-faults %s:%d: %q ends before it starts", path, n, l.Name)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-faults %s: %w", path, err)
	}
	return out, nil
}

// checkFaults reads a -faults file that already exists before the run, so
// that a mistake in it stops loadgen before the load rather than after.
// A file that does not exist yet is fine: the injector may create it.
func checkFaults(path string) error {
	if path == "" {
		return nil
	}
	if _, err := readFaults(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return usagef("%v", err)
	}
	return nil
}

// faultWindows reads the -faults file after a run that started at start
// and lasted wall, and returns the faults that overlap the run, clipped to
// it. A fault without an end lasted until the end of the run.
func faultWindows(path string, start time.Time, wall time.Duration) ([]faultWindow, error) {
	lines, err := readFaults(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	var out []faultWindow
	for _, l := range lines {
		from, to := l.Start.Sub(start), wall
		if !l.End.IsZero() {
			to = l.End.Sub(start)
		}
		if to < 0 || from > wall {
			continue // another run's fault
		}
		out = append(out, faultWindow{Name: l.Name, StartS: max(from, 0).Seconds(), EndS: min(to, wall).Seconds()})
	}
	return out, nil
}
