package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// faultKinds are the faults the nemesis knows, in the order -faults
// documents them.
var faultKinds = []string{"kill", "pause", "failover", "partition", "latency", "clock", "flush", "pgrestart"}

// scheduledFault is one fault of the schedule: what, on what, from when to
// when (milliseconds from the start of the load). Its JSON is the
// schedule's canonical form, hashed as schedule_sha256.
type scheduledFault struct {
	Kind    string `json:"kind"`
	Target  string `json:"target"`
	StartMS int64  `json:"start_ms"`
	EndMS   int64  `json:"end_ms"`
}

func (f scheduledFault) start() time.Duration { return time.Duration(f.StartMS) * time.Millisecond }
func (f scheduledFault) end() time.Duration   { return time.Duration(f.EndMS) * time.Millisecond }

// parseFaultKinds reads -faults: a comma list of faultKinds, "all" or
// empty for every one.
func parseFaultKinds(s string) ([]string, error) {
	if s == "" || s == "all" {
		return slices.Clone(faultKinds), nil
	}
	var kinds []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(faultKinds, k) {
			return nil, usagef("nemesis: -faults: unknown fault %q (want a comma list of %s)", k, strings.Join(faultKinds, ","))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// The schedule's shape: faults one at a time, each lasting faultSpan
// (plus up to as much again), with a quiet gap of gapSpan (plus up to as
// much again) before it, none in the first quietStart nor in the last
// quietEnd of the run, so that the run starts and ends healthy.
const (
	faultSpan  = 2 * time.Second
	gapSpan    = 2 * time.Second
	quietStart = 3 * time.Second
	quietEnd   = 3 * time.Second
)

// makeSchedule draws the fault schedule of a run of length total over
// instances API instances from seed alone: the same arguments always give
// the same schedule.
func makeSchedule(seed uint64, kinds []string, total time.Duration, instances int) []scheduledFault {
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973)) // "nemesis"
	var out []scheduledFault
	at := quietStart
	for len(kinds) > 0 {
		at += gapSpan + time.Duration(rng.Int64N(int64(gapSpan)))
		span := faultSpan + time.Duration(rng.Int64N(int64(faultSpan)))
		if at+span > total-quietEnd {
			break
		}
		kind := kinds[rng.IntN(len(kinds))]
		out = append(out, scheduledFault{
			Kind:    kind,
			Target:  faultTarget(kind, rng, instances),
			StartMS: at.Milliseconds(),
			EndMS:   (at + span).Milliseconds(),
		})
		at += span
	}
	return out
}

// faultTarget names what a fault of kind breaks: an instance, one of an
// instance's links, or a backend. Each draw takes one number of rng (a
// second one only with a chance of n in 2^64), so that a link added to
// the choices changes which link a fault hits, not the faults after it.
func faultTarget(kind string, rng *rand.Rand, instances int) string {
	api := fmt.Sprintf("api-%d", rng.IntN(instances))
	switch kind {
	case "kill", "pause":
		return api
	case "partition", "latency":
		links := []string{"postgres", "payments", "redis"}
		return api + " -> " + links[rng.IntN(len(links))]
	case "pgrestart":
		return "postgres"
	}
	return "redis"
}

// scheduleHash is the sha256, in hex, of the schedule's canonical JSON.
func scheduleHash(s []scheduledFault) string {
	if s == nil {
		s = []scheduledFault{}
	}
	b, _ := json.Marshal(s) // strings and integers: it cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
