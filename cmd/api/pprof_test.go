package main

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

func TestLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:6060": true,
		"127.0.0.2:6060": true,
		"[::1]:6060":     true,
		"localhost:6060": true,
		":6060":          false,
		"0.0.0.0:6060":   false,
		"[::]:6060":      false,
		"10.0.0.1:6060":  false,
		"example.com:80": false,
		"127.0.0.1":      false, // no port
	} {
		if got := loopbackAddr(addr); got != want {
			t.Errorf("loopbackAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}

// The profiling endpoints answer on their own listener, and stop closes it.
func TestPprofServesProfiles(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := startPprof(ln, slog.New(slog.DiscardHandler))
	url := "http://" + ln.Addr().String() + "/debug/pprof/goroutine?debug=1"
	resp, err := http.Get(url)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Errorf("GET %s = %d with %d bytes, want 200 with a profile", url, resp.StatusCode, len(body))
	}
	stop()
	if _, err := http.Get(url); err == nil {
		t.Errorf("GET %s after stop answered, want the listener closed", url)
	}
}
