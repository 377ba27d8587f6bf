package main

import (
	"net"
	"strings"
	"testing"
)

// TestHealthcheck runs "api -healthcheck" as the container runtime does, a
// process of its own, and reads its exit status: 0 against a running
// server, also when ADDR names no host (":port", as in the image); 1
// against a port where nothing listens, with the reason on stderr.
func TestHealthcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	inst := startAPI(t, map[string]string{})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(inst.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// Port 1 is below the ephemeral range and needs root to bind: no test's
	// server can take it between the check and the dial, as a port freed by
	// a closed listener can (CI once saw another server answer on one).
	const dead = "127.0.0.1:1"

	for _, tc := range []mainCase{
		{"running server", "-healthcheck -addr 127.0.0.1:" + port, nil, 0, ""},
		{"address without a host, from the environment", "-healthcheck", []string{"ADDR=:" + port}, 0, ""},
		{"nothing listens", "-healthcheck -addr " + dead, nil, 1, "api: healthcheck: "},
		{"not host:port", "-healthcheck -addr nonsense", nil, 2, "api: ADDR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, stdout, stderr := runMain(t, tc.args, tc.env...)
			if status != tc.status || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit status %d, stderr %q; want %d and %q", status, stderr, tc.status, tc.want)
			}
			if tc.status == 0 && !strings.Contains(stdout, "healthy") {
				t.Errorf("stdout %q, want it to say healthy", stdout)
			}
		})
	}
}
