package main

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// runHealthz runs the calibration scenario: the same clients, loop and
// report as a booking run, but every request is GET /healthz, an endpoint
// that touches no backend. Nothing is booked, so nothing is verified: the
// verification fields stay zero and linearizable is "unknown". What it
// measures is loadgen's own sending rate against a trivial server, to be
// compared with another load tool on the same endpoint (see
// docs/benchmarks-loadgen.md).
func runHealthz(ctx context.Context, c *client, cfg config, p progress) (*report, error) {
	total := int64(-1)
	if cfg.stopByRequests {
		total = int64(cfg.requests)
	}
	tick, finish := p.start(total, "healthz")
	probe := healthzSender{c}
	d := &driver{
		targets:   cfg.targets,
		clients:   cfg.clients,
		rate:      cfg.rate,
		duration:  cfg.duration,
		newSender: func(int) sender { return probe },
		seed:      cfg.seed,
		progress:  tick,
	}
	if cfg.stopByRequests {
		d.requests = cfg.requests
	}
	records, start, wall, err := d.run(ctx)
	finish()
	if err != nil {
		return nil, err
	}
	tl, err := runTimeline(cfg, records, start, wall, nil)
	if err != nil {
		return nil, err
	}
	rep := newReport(cfg)
	rep.Linearizable, rep.Timeline = unknownVerdict, tl
	rep.summarize(records, wall)
	// summarize counts only 201 as success; here success is 200, and no
	// critical section is involved, so parallelism is left out.
	ok := rep.ByStatus["200"]
	rep.Succeeded, rep.Errors = ok, rep.Errors-ok
	delete(rep.ByCode, "http_200")
	if wall > 0 {
		rep.ConfirmedRPS = float64(ok) / wall.Seconds()
	}
	rep.Parallelism, rep.ParallelismBasis = 0, ""
	return rep, nil
}

// healthzSender sends GET /healthz.
type healthzSender struct{ client *client }

func (s healthzSender) send(ctx context.Context, start time.Time, target string, _ int, _ *rand.Rand) (record, bool, error) {
	r := record{sent: time.Since(start)}
	r.answer = s.client.probe(ctx, target)
	r.done = time.Since(start)
	return r, false, nil
}

// probe sends GET /healthz and reads the answer to the end, so that the
// connection is reused. Like book, it never fails: a 200 is counted as
// status 200, anything else as what it was.
func (c *client) probe(ctx context.Context, target string) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/healthz", nil)
	if err != nil {
		return answer{err: err}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return answer{err: err}
	}
	return answer{status: resp.StatusCode}
}
