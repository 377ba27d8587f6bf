package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
)

// How hard the faults hit: a clock jump well past the lease (LOCK_TTL,
// 10 s by default), so that every lease in Redis expires at once, and a
// latency of a sizeable share of the lock wait.
const (
	clockJump = 30 * time.Second
	latencyMS = 300
)

// faultRecord is a fault as it ran: when it really began and ended
// (seconds from the start of the load), and the first success on what it
// hit after it ended.
type faultRecord struct {
	Kind      string   `json:"kind"`
	Target    string   `json:"target"`
	StartS    float64  `json:"start_s"`
	EndS      float64  `json:"end_s"`
	RecoveryS *float64 `json:"recovery_s"` // nil: no success on the target after it
	Overlaps  int64    `json:"overlaps"`   // overlapping charges that began during it
	Error     string   `json:"error,omitempty"`
}

// nemesis injects a schedule's faults into a cluster, one at a time.
type nemesis struct {
	c     *cluster.Cluster
	start time.Time
	// heal is the context of healing: the run's, not the load's, so that
	// a fault that ends as the load does is still healed.
	heal context.Context
}

// run applies every fault at its time and heals it at its end, until the
// schedule or ctx ends, and returns what ran. A fault that could not be
// applied or healed carries its error.
func (n *nemesis) run(ctx context.Context, schedule []scheduledFault) []faultRecord {
	var out []faultRecord
	for _, f := range schedule {
		if !sleepUntil(ctx, n.start.Add(f.start())) {
			break
		}
		rec := faultRecord{Kind: f.Kind, Target: f.Target, StartS: n.since()}
		heal, err := n.apply(ctx, f)
		if err == nil {
			sleepUntil(ctx, n.start.Add(f.end()))
			err = heal()
		}
		rec.EndS = n.since()
		if err != nil {
			rec.Error = err.Error()
		}
		out = append(out, rec)
	}
	return out
}

func (n *nemesis) since() float64 { return time.Since(n.start).Seconds() }

// apply starts fault f and returns what heals it.
func (n *nemesis) apply(ctx context.Context, f scheduledFault) (heal func() error, err error) {
	none := func() error { return nil }
	switch f.Kind {
	case "kill":
		a := n.api(f.Target)
		return func() error { return a.Start(n.heal) }, a.Kill()
	case "pause":
		a := n.api(f.Target)
		return a.Resume, a.Pause()
	case "failover":
		_, err := n.c.Redis.Failover()
		return none, err
	case "flush":
		p := n.c.Redis.Primary()
		if p == nil {
			return none, fmt.Errorf("flush: the Sentinels name no primary")
		}
		return none, p.FlushAll(ctx)
	case "clock":
		p := n.c.Redis.Primary()
		if p == nil {
			return none, fmt.Errorf("clock: the Sentinels name no primary")
		}
		return func() error { return p.JumpClock(0) }, p.JumpClock(clockJump)
	case "pgrestart":
		return n.c.Postgres.Start, n.c.Postgres.Stop()
	case "partition":
		links := n.links(f.Target)
		for _, l := range links {
			l.Cut()
		}
		return healLinks(links), nil
	case "latency":
		links := n.links(f.Target)
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Slow(latencyMS))
		}
		if err := errors.Join(errs...); err != nil {
			return none, errors.Join(err, healLinks(links)())
		}
		return healLinks(links), nil
	}
	return none, fmt.Errorf("unknown fault %q", f.Kind)
}

// api is the instance a target names ("api-1", or "api-1 -> postgres").
func (n *nemesis) api(target string) *cluster.API {
	return n.c.APIs[instanceIndex(target)]
}

// instanceIndex is the number of the instance a target names, 0 when it
// names none.
func instanceIndex(target string) int {
	name, _, _ := strings.Cut(target, " ")
	i, err := strconv.Atoi(strings.TrimPrefix(name, "api-"))
	if err != nil {
		return 0
	}
	return i
}

// links are the links a target names ("api-1 -> payments"). "api-1 ->
// redis" names the instance's links to both Redis servers, so that the
// fault hits its link to the primary whichever server that is.
func (n *nemesis) links(target string) []*cluster.Link {
	i := instanceIndex(target)
	switch {
	case strings.HasSuffix(target, "payments"):
		return []*cluster.Link{n.c.PayLinks[i]}
	case strings.HasSuffix(target, "redis"):
		return n.c.RedisLinks[i]
	}
	return []*cluster.Link{n.c.DBLinks[i]}
}

// healLinks returns what heals every link of links.
func healLinks(links []*cluster.Link) func() error {
	return func() error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Heal())
		}
		return errors.Join(errs...)
	}
}

// sleepUntil waits until t or until ctx ends, and reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
