package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/internal/testenv"
)

// The tests of this file attack the server itself, through run on
// 127.0.0.1:0: connections that never finish their request, dribbled
// headers and bodies, over-size headers and bodies, raw request lines no
// client library would send, and a look inside Postgres for secrets.

// startLimited is startAPI with the server's limits given, so that the
// timeouts can be watched in seconds.
func startLimited(t *testing.T, limits serverLimits, env map[string]string, args ...string) *instance {
	t.Helper()
	inst, err := launch(t, limits, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// dial opens a raw TCP connection to an instance.
func dial(t *testing.T, inst *instance) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(inst.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedByServer waits up to d for the server to end conn, reading and
// discarding whatever it answers first; it returns what was answered.
func closedByServer(conn net.Conn, d time.Duration) (answer string, closed bool) {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true // io.EOF (ReadAll's nil) or a reset
}

// stillOpen reports whether the server has not ended conn, without
// waiting for more than a moment.
func stillOpen(conn net.Conn) bool {
	_, closed := closedByServer(conn, 10*time.Millisecond)
	return !closed
}

// openFDs counts the file descriptors of this process.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// fdsBackTo waits up to 5s for the process's open file descriptors to be
// back to baseline (give or take 10), fails t if they are not, and returns
// the last count.
func fdsBackTo(t *testing.T, baseline int) int {
	t.Helper()
	var now int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if now = openFDs(t); now <= baseline+10 {
			return now
		}
	}
	t.Errorf("%d file descriptors open, %d before", now, baseline)
	return now
}

// TestHalfOpenConnections opens 300 connections that never finish a
// request (half of them send half a request line, half send nothing). The
// server, with its real limits, still answers /healthz while they are
// open, closes every one of them within ReadHeaderTimeout and a margin,
// and gives their file descriptors back.
func TestHalfOpenConnections(t *testing.T) {
	inst := startAPI(t, nil)
	httpClient.CloseIdleConnections()
	baseline := openFDs(t)
	const n = 300
	conns := make([]net.Conn, n)
	opened := time.Now()
	for i := range conns {
		conns[i] = dial(t, inst)
		if i%2 == 0 {
			if _, err := conns[i].Write([]byte("GET /heal")); err != nil {
				t.Fatal(err)
			}
		}
	}

	during := openFDs(t)

	// A fresh connection of a fresh client, so that nothing is reused.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	res, err := client.Get(inst.url + "/healthz")
	if err != nil {
		t.Fatalf("healthz with %d half-open connections: %v", n, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", res.StatusCode)
	}
	open := 0
	for _, c := range conns {
		if stillOpen(c) {
			open++
		}
	}
	// The half-open connections were all still there when healthz
	// answered: they did not starve it by being cut first.
	if open != n {
		t.Errorf("only %d of %d half-open connections were still open when healthz answered", open, n)
	}

	limit := defaultLimits().readHeader + 5*time.Second
	var wg sync.WaitGroup
	var mu sync.Mutex
	var leftOpen int
	for _, c := range conns {
		wg.Go(func() {
			if _, closed := closedByServer(c, time.Until(opened.Add(limit))); !closed {
				mu.Lock()
				leftOpen++
				mu.Unlock()
			}
			c.Close()
		})
	}
	wg.Wait()
	if leftOpen > 0 {
		t.Errorf("%d of %d half-open connections still open %v after they were opened (ReadHeaderTimeout %v)", leftOpen, n, limit, defaultLimits().readHeader)
	}
	// Both ends of every connection live in this process: once the
	// server has closed its ends and the test its own, the count is back.
	now := fdsBackTo(t, baseline)
	t.Logf("fds: %d before, %d with %d half-open connections, %d after", baseline, during, n, now)
}

// TestServerTimeouts checks each timeout with short limits: dribbled
// headers are cut by ReadHeaderTimeout, a dribbled body by ReadTimeout, an
// idle kept-alive connection by IdleTimeout.
func TestServerTimeouts(t *testing.T) {
	limits := serverLimits{readHeader: time.Second, read: 2 * time.Second, idle: time.Second, maxHeaderBytes: 4 << 10}
	inst := startLimited(t, limits, map[string]string{"DEMO_MODE": "true"})
	httpClient.CloseIdleConnections()
	baseline := openFDs(t)
	margin := 3 * time.Second

	// dribble writes s one byte every 100ms until the server cuts the
	// connection or s ends; it returns when the writing stopped.
	dribble := func(conn net.Conn, s string) {
		for i := 0; i < len(s); i++ {
			if _, err := conn.Write([]byte{s[i]}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	t.Run("slow headers are cut by ReadHeaderTimeout", func(t *testing.T) {
		conn := dial(t, inst)
		go dribble(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n"+strings.Repeat("X-Slow: 1\r\n", 100))
		answer, closed := closedByServer(conn, limits.readHeader+margin)
		if !closed || strings.Contains(answer, " 200 ") {
			t.Errorf("closed %v, answer %q", closed, answer)
		}
	})

	t.Run("a slow body is cut by ReadTimeout", func(t *testing.T) {
		conn := dial(t, inst)
		head := "POST /v1/screenings/demo/bookings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n"
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		go dribble(conn, `{"seats":["A1"],"customer":"`+strings.Repeat("s", 400))
		answer, closed := closedByServer(conn, limits.read+margin)
		if !closed {
			t.Fatalf("a dribbled body held its connection past ReadTimeout+%v", margin)
		}
		if strings.Contains(answer, " 201 ") || strings.Contains(answer, " 50") {
			t.Errorf("answer to a dribbled body: %q", answer)
		}
	})

	t.Run("an idle connection is closed by IdleTimeout", func(t *testing.T) {
		conn := dial(t, inst)
		if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("healthz: %v %v", res, err)
		}
		res.Body.Close()
		if _, closed := closedByServer(conn, limits.idle+margin); !closed {
			t.Errorf("an idle connection outlived IdleTimeout+%v", margin)
		}
	})

	t.Run("over-size headers are 431", func(t *testing.T) {
		conn := dial(t, inst)
		req := "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("b", 2*limits.maxHeaderBytes+4096) + "\r\n\r\n"
		_, _ = conn.Write([]byte(req))
		answer, _ := closedByServer(conn, margin)
		if !strings.HasPrefix(answer, "HTTP/1.1 431 ") {
			t.Errorf("answer %.80q, want 431", answer)
		}
	})

	t.Run("a declared body over the limit is 413 before it is sent", func(t *testing.T) {
		// The client announces a huge body and sends none of it: the
		// server must refuse at once rather than wait for ReadTimeout.
		conn := dial(t, inst)
		head := "POST /v1/screenings/demo/bookings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n"
		if _, err := conn.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(limits.read + margin))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, http.StatusRequestEntityTooLarge, "request_too_large")
	})

	t.Run("a chunked body over the limit is 413", func(t *testing.T) {
		req, _ := http.NewRequest("POST", inst.url+"/v1/screenings/demo/bookings",
			io.MultiReader(strings.NewReader(`{"seats":["A1"],"customer":"`), strings.NewReader(strings.Repeat("c", 100<<10)), strings.NewReader(`"}`)))
		req.ContentLength = -1 // chunked: the size is not announced
		req.Header.Set("Content-Type", "application/json")
		res, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, http.StatusRequestEntityTooLarge, "request_too_large")
	})

	httpClient.CloseIdleConnections()
	fdsBackTo(t, baseline)
}

// TestRawRequestLines sends request targets that no client library would
// build, straight over TCP. net/http refuses some itself (a plain-text
// 400); whatever reaches a handler is a JSON 4xx; nothing is a 5xx.
func TestRawRequestLines(t *testing.T) {
	inst := startAPI(t, nil)
	before, _ := seatsOf(t, inst.url, "demo")
	for _, target := range []string{
		"/v1/bookings/%00", "/v1/screenings/..%2F..%2Fx", "/v1/screenings/../../etc/passwd",
		"/v1/screenings/%2e%2e/%2e%2e/healthz", "/v1/screenings/demo%00/seats", "/v1/screenings/demo/seats?%00=%00",
		"/v1/bookings/" + strings.Repeat("9", 20000), "/v1/screenings/%ZZ", "/v1/screenings/\x01", "/v1/screenings/a b",
		"/v1/screenings/\xff\xfe", "*", "http://evil.example/v1/screenings", "//evil.example/v1/screenings",
		"/v1/screenings/demo/bookings?seats=A1&customer=x", "/v1/bookings/urn:uuid:00000000-0000-4000-8000-000000000000",
	} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			name := method + " " + target
			if len(name) > 60 {
				name = name[:60]
			}
			t.Run(name, func(t *testing.T) {
				conn := dial(t, inst)
				req := method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
				if _, err := conn.Write([]byte(req)); err != nil {
					t.Fatal(err)
				}
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode >= 500 {
					t.Fatalf("%d %s", res.StatusCode, body)
				}
				if res.StatusCode >= 400 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
					checkNoLeak(t, body)
					if e := decode[apiError](t, response{status: res.StatusCode, body: body}); e.Error.Code == "" || e.Error.Message == "" {
						t.Errorf("error without code or message: %s", body)
					}
				}
			})
		}
	}
	if after, _ := seatsOf(t, inst.url, "demo"); after != before {
		t.Errorf("raw requests changed the seat map")
	}
}

// leakWords are fragments of internal error text that no answer may carry.
var leakWords = []string{"dial", "tcp", "sql", "pgx", "pgconn", "redis:", "select ", "goroutine ", "panic", ".go:", "connection refused", "postgres:"}

func checkNoLeak(t *testing.T, body []byte) {
	t.Helper()
	lower := strings.ToLower(string(body))
	for _, w := range leakWords {
		if strings.Contains(lower, w) {
			t.Errorf("answer contains %q: %s", w, body)
		}
	}
}

// TestRedisDownLeaksNothing: with Redis gone after start-up, every route
// answers without a trace of the cause.
func TestRedisDownLeaksNothing(t *testing.T) {
	redisURL, stop := startRedis(t)
	inst := startAPI(t, map[string]string{"REDIS_URL": redisURL}, "-lock-wait", "1s")
	stop()
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"GET", "/v1/screenings", ""},
		{"GET", "/v1/screenings/demo/seats", ""},
		{"POST", "/v1/screenings/demo/bookings", bookingBody("al", "A1")},
		{"POST", "/v1/screenings/demo/bookings", bookingBody("al", "A2", "B3")},
		{"GET", "/v1/bookings/00000000-0000-4000-8000-000000000000", ""},
	} {
		r := call(t, tc.method, inst.url+tc.path, tc.body, "Idempotency-Key", "k")
		if r.status >= 500 {
			wantError(t, r, http.StatusServiceUnavailable, "unavailable")
		}
		checkNoLeak(t, r.body)
	}
}

// TestPostgresKeepsNoSecrets books through run on a fresh Postgres
// database, with and without an Idempotency-Key, and reads every row of
// every table as text: no booking token appears, in hex or as raw bytes.
// It also checks that booking ids the store cannot parse are 404, not 500.
func TestPostgresKeepsNoSecrets(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	inst := startAPI(t, map[string]string{"REDIS_URL": testenv.RedisURL(t), "DATABASE_URL": dbURL})
	url := inst.url + "/v1/screenings/demo/bookings"
	var tokens []string
	for i, key := range []string{"", "order-secret-key-1"} {
		r := call(t, "POST", url, bookingBody("al", fmt.Sprintf("C%d", i+1)), "Idempotency-Key", key)
		if key == "" {
			r = call(t, "POST", url, bookingBody("al", fmt.Sprintf("C%d", i+1)))
		}
		if r.status != http.StatusCreated {
			t.Fatalf("book: %d %s", r.status, r.body)
		}
		tokens = append(tokens, decode[booking](t, r).Token)
	}

	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var dump strings.Builder
	for _, table := range tables {
		rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT t::text FROM %s t`, pgx.Identifier{table}.Sanitize()))
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		dump.WriteString(strings.Join(lines, "\n"))
	}
	all := strings.ToLower(dump.String())
	for _, token := range tokens {
		sum := sha256.Sum256([]byte(token))
		// A token is 64 hex digits: stored as text or as its raw bytes it
		// shows as those digits (bytea prints as \x and hex).
		if strings.Contains(all, strings.ToLower(token)) {
			t.Errorf("token %s... is stored in the clear", token[:8])
		}
		if !strings.Contains(all, hex.EncodeToString(sum[:])) {
			t.Errorf("the SHA-256 of token %s... is not stored; is the test reading the right tables (%v)?", token[:8], tables)
		}
	}
	if strings.Contains(all, "order-secret-key-1") {
		t.Errorf("the Idempotency-Key is stored in the clear")
	}

	for _, id := range []string{
		"urn:uuid:00000000-0000-4000-8000-000000000000", "{00000000-0000-4000-8000-000000000000}",
		"00000000000040008000000000000000", "00000000-0000-4000-8000-00000000000G",
	} {
		for _, method := range []string{"GET", "DELETE"} {
			r := call(t, method, inst.url+"/v1/bookings/"+id, "", "Authorization", "Bearer x")
			wantError(t, r, http.StatusNotFound, "not_found")
		}
	}
}
