package main

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// startRedis starts an embedded Redis server for a test and returns its
// URL and a function that stops it, for the test to stop it early; it
// stops when the test ends in any case.
func startRedis(t *testing.T) (url string, stop func()) {
	t.Helper()
	srv, err := embeddedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(func() { _ = srv.Close() })
	t.Cleanup(stop)
	return "redis://" + srv.Addr() + "/0", stop
}

// deadAddr is a loopback address on which nothing listens.
func deadAddr(t *testing.T) string {
	return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
}

// silentAddr is a loopback address on which a server accepts connections
// and never answers, not even a handshake: a server still starting, or
// stuck.
func silentAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // protects conns: the accepting goroutine appends
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener was closed
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// TestStartupNamesWhatDoesNotAnswer: a backend that does not answer at
// start-up stops the server with exit status 1 and one line that names
// the backend and where it is, its password hidden, once startupWait has
// passed at most (give or take the few seconds a ZooKeeper client takes
// to close).
func TestStartupNamesWhatDoesNotAnswer(t *testing.T) {
	live, _ := startRedis(t)
	dead := deadAddr(t)
	silent := silentAddr(t)
	host, port, _ := net.SplitHostPort(dead)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string // in the exit line
	}{
		{"redis", map[string]string{"REDIS_URL": "redis://:secretpw@" + dead + "/0"},
			[]string{"api: redis at redis://:xxxxx@" + dead + "/0 does not answer: ", "connection refused"}},
		{"postgres", map[string]string{"DATABASE_URL": "postgres://u:secretpw@" + dead + "/x?sslmode=disable"},
			[]string{"api: postgres at postgres://u:xxxxx@" + dead + "/x?sslmode=disable does not answer: ", "connection refused"}},
		{"postgres, password as a parameter", map[string]string{"DATABASE_URL": "postgres://u@" + dead + "/x?password=secretpw&sslmode=disable"},
			[]string{"api: postgres at postgres://u@" + dead + "/x?password=xxxxx&sslmode=disable does not answer: "}},
		{"postgres, key=value", map[string]string{"DATABASE_URL": "host=" + host + " port=" + port + " dbname=x user=u password=secretpw sslmode=disable"},
			[]string{"api: postgres at host=" + host + " port=" + port + " dbname=x does not answer: "}},
		{"redlock without a majority", map[string]string{"REDLOCK_URLS": live + ",redis://:secretpw@" + dead + "/0,redis://" + dead + "/1"},
			[]string{"api: redlock: 1 of its 3 nodes answers, fewer than the majority of 2 it needs; ",
				"redlock node at redis://:xxxxx@" + dead + "/0 (node 2 of 3) does not answer: ",
				"redlock node at redis://" + dead + "/1 (node 3 of 3) does not answer: "}},
		{"zookeeper", map[string]string{"ZOOKEEPER_SERVERS": dead},
			[]string{"api: zookeeper at " + dead + " does not answer: "}},
		{"zookeeper that never answers the handshake", map[string]string{"ZOOKEEPER_SERVERS": silent},
			[]string{"api: zookeeper at " + silent + " does not answer: ", "context deadline exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // ZooKeeper takes startupWait to give up
			logs := testenv.NewLogWatcher()
			exited := make(chan error, 1)
			go func() {
				exited <- run(t.Context(), []string{"-addr", "127.0.0.1:0"}, func(k string) string { return tc.env[k] }, &strings.Builder{}, logs)
			}()
			// A bound on a hang: the ZooKeeper client's own wait for a
			// handshake is almost seven session timeouts (LOCK_TTL, 10 s).
			err := wait.Recv(t, exited, startupWait+30*time.Second, "the server to give up on "+tc.name)
			var exit strings.Builder
			if status := exitCode(err, &exit); status != 1 {
				t.Errorf("exit status %d (%v), want 1", status, err)
			}
			line := exit.String()
			if strings.Count(line, "\n") != 1 {
				t.Errorf("exit message %q is not one line", line)
			}
			for _, want := range tc.want {
				if !strings.Contains(line, want) {
					t.Errorf("exit line %q lacks %q", line, want)
				}
			}
			if strings.Contains(line+logs.String(), "secretpw") {
				t.Errorf("the password shows:\n%s%s", line, logs)
			}
			if strings.Contains(logs.String(), "listening") {
				t.Errorf("the server listened:\n%s", logs)
			}
		})
	}
}

// TestMainLogsLibrariesStructured runs main with a Redis that does not
// answer: go-redis's own complaints come out in the server's structured
// format, and the process ends with the exit line.
func TestMainLogsLibrariesStructured(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dead := deadAddr(t)
	status, _, stderr := runMain(t, "-addr 127.0.0.1:0", "REDIS_URL=redis://:secretpw@"+dead+"/0")
	if status != 1 {
		t.Errorf("exit status %d, want 1:\n%s", status, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "api: redis at redis://:xxxxx@"+dead+"/0 does not answer") {
		t.Errorf("last line %q, want the exit line naming redis", lines[len(lines)-1])
	}
	libraryLines := 0
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, " level=") {
			t.Errorf("a line not in the server's format: %q", l)
		}
		if strings.Contains(l, "lib=go-redis") {
			libraryLines++
		}
	}
	if libraryLines == 0 {
		t.Errorf("no go-redis line in the server's format:\n%s", stderr)
	}
	if strings.Contains(stderr, "secretpw") {
		t.Errorf("the password shows:\n%s", stderr)
	}
}

// TestRedlockStartsWithAMajority: Redlock works while a majority of its
// nodes answer, so start-up warns of a node down, naming it, and serves.
func TestRedlockStartsWithAMajority(t *testing.T) {
	a, _ := startRedis(t)
	b, _ := startRedis(t)
	dead := deadAddr(t)
	api := startAPI(t, map[string]string{"REDLOCK_URLS": a + ",redis://:secretpw@" + dead + "/0," + b})
	log := api.logs.String()
	if !strings.Contains(log, `level=WARN msg="redlock node does not answer; Redlock goes on while a majority does" node="redis://:xxxxx@`+dead+`/0 (node 2 of 3)"`) {
		t.Errorf("no warning naming node 2:\n%s", log)
	}
	if strings.Contains(log, "secretpw") {
		t.Errorf("the password shows:\n%s", log)
	}
	if r := call(t, "GET", api.url+"/readyz", ""); r.status != http.StatusOK {
		t.Errorf("readyz with 2 of 3 nodes: %d %s", r.status, r.body)
	}
}

// waitReadyz polls /readyz until it answers status, failing the test with
// the last answer after 10 s, and returns the answer.
func waitReadyz(t *testing.T, base string, status int) response {
	t.Helper()
	var r response
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if r = call(t, "GET", base+"/readyz", ""); r.status == status {
			return r
		}
	}
	t.Fatalf("/readyz did not answer %d within 10s; last %d %s", status, r.status, r.body)
	return r
}

// waitLog waits up to 10 s for a line of the instance's log that holds
// every one of parts, and fails the test, showing the log, if none comes.
func waitLog(t *testing.T, api *instance, parts ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for line := range strings.Lines(api.logs.String()) {
			if containsAll(line, parts) {
				return
			}
		}
	}
	t.Fatalf("no log line with %q within 10s:\n%s", parts, api.logs.Tail(4<<10))
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestReadyzNamesWhatDoesNotAnswer: once started, the server rides out an
// outage: /readyz answers 503 naming the backend, and bookings 503.
func TestReadyzNamesWhatDoesNotAnswer(t *testing.T) {
	t.Run("redis", func(t *testing.T) {
		u, stop := startRedis(t)
		api := startAPI(t, map[string]string{"REDIS_URL": u}, "-lock-wait", "2s")
		waitReadyz(t, api.url, http.StatusOK)
		stop()
		r := waitReadyz(t, api.url, http.StatusServiceUnavailable)
		if e := wantError(t, r, http.StatusServiceUnavailable, "unavailable"); e.Error.Message != "not ready: redis does not answer" {
			t.Errorf("message %q, want it to name redis", e.Error.Message)
		}
		// The request's log line says where: it is written after the answer.
		waitLog(t, api, "route=/readyz status=503", "err=\"redis at "+u+" does not answer: ")
		before, _ := seatsOf(t, api.url, "demo")
		e := wantError(t, call(t, "POST", api.url+"/v1/screenings/demo/bookings", bookingBody("al", "A1")), http.StatusServiceUnavailable, "unavailable")
		if strings.Contains(e.Error.Message, "127.0.0.1") || strings.Contains(e.Error.Message, "dial") {
			t.Errorf("503 message leaks the cause: %q", e.Error.Message)
		}
		if after, _ := seatsOf(t, api.url, "demo"); after != before {
			t.Errorf("a 503 booking changed the seat map")
		}
		// Reads that need no lock still work.
		if r := call(t, "GET", api.url+"/v1/screenings/demo", ""); r.status != http.StatusOK {
			t.Errorf("GET screening: %d", r.status)
		}
	})
	t.Run("redlock without a majority", func(t *testing.T) {
		au, stopA := startRedis(t)
		bu, stopB := startRedis(t)
		cu, _ := startRedis(t)
		api := startAPI(t, map[string]string{"REDLOCK_URLS": au + "," + bu + "," + cu})
		waitReadyz(t, api.url, http.StatusOK)
		stopA()
		if r := call(t, "GET", api.url+"/readyz", ""); r.status != http.StatusOK {
			t.Errorf("readyz with 2 of 3 nodes: %d %s", r.status, r.body)
		}
		stopB()
		r := waitReadyz(t, api.url, http.StatusServiceUnavailable)
		if e := wantError(t, r, http.StatusServiceUnavailable, "unavailable"); e.Error.Message != "not ready: redlock does not answer" {
			t.Errorf("message %q, want it to name redlock", e.Error.Message)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := url.Parse(testenv.NewDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		proxy := testenv.StartProxy(t, "postgres", db.Host)
		db.Host = proxy.Listen
		api := startAPI(t, map[string]string{"DATABASE_URL": db.String()})
		waitReadyz(t, api.url, http.StatusOK)
		proxy.Stop()
		r := waitReadyz(t, api.url, http.StatusServiceUnavailable)
		if e := wantError(t, r, http.StatusServiceUnavailable, "unavailable"); e.Error.Message != "not ready: postgres does not answer" {
			t.Errorf("message %q, want it to name postgres", e.Error.Message)
		}
	})
}

// TestListeningLineSaysWhereTheSeatMapIs: the start-up line gives the URL
// of the seat map, on localhost for a server listening on every address.
func TestListeningLineSaysWhereTheSeatMapIs(t *testing.T) {
	api := startAPI(t, nil)
	if want := "seat_map=" + api.url + "/ "; !strings.Contains(api.logs.String(), want) {
		t.Errorf("no %s in the log:\n%s", want, api.logs)
	}
	for addr, want := range map[string]string{
		"[::]:8080":      "http://localhost:8080/",
		"0.0.0.0:8080":   "http://localhost:8080/",
		"127.0.0.1:8081": "http://127.0.0.1:8081/",
		"[::1]:8082":     "http://[::1]:8082/",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := seatMapURL(tcp); got != want {
			t.Errorf("seatMapURL(%s) = %s, want %s", addr, got, want)
		}
	}
}
