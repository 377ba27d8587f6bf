package main

import "testing"

// The calibration scenario only GETs /healthz: every answer is a success,
// no screening is created, nothing is verified.
func TestRunHealthz(t *testing.T) {
	f := &fakeAPI{}
	url := newFakeAPI(t, f)
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "healthz",
		"-clients", "4", "-requests", "200", "-json")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr: %s\n%s", code, stderr, stdout)
	}
	rep := decodeReport(t, stdout)
	if rep["requests"] != 200.0 || rep["succeeded"] != 200.0 || rep["errors"] != 0.0 {
		t.Errorf("requests, succeeded, errors = %v, %v, %v; want 200, 200, 0",
			rep["requests"], rep["succeeded"], rep["errors"])
	}
	if rep["throughput_rps"].(float64) <= 0 {
		t.Errorf("throughput_rps = %v, want > 0", rep["throughput_rps"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.screenings) != 0 {
		t.Errorf("healthz created %d screenings, want none", len(f.screenings))
	}
}

func TestCompareRefusesHealthz(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{})
	if code, _, stderr := runLoadgen(t, nil, "compare", "-targets", url, "-scenario", "healthz"); code != 2 {
		t.Fatalf("exit %d, want 2; stderr: %s", code, stderr)
	}
}
