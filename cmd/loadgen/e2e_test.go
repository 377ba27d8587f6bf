package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// runLoadgen runs loadgen in-process and returns its exit status, stdout
// and stderr.
func runLoadgen(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	code := exitStatus(err, &stderr)
	return code, stdout.String(), stderr.String()
}

// decodeReport parses a -json report.
func decodeReport(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var rep map[string]any
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	return rep
}

func TestRunCleanServerExitsZero(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{})
	for _, scenario := range []string{"hot", "spread", "mixed", "multi"} {
		t.Run(scenario, func(t *testing.T) {
			code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", scenario,
				"-clients", "8", "-requests", "300", "-json")
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr: %s\n%s", code, stderr, stdout)
			}
			rep := decodeReport(t, stdout)
			if rep["requests"] != 300.0 {
				t.Errorf("requests = %v, want 300", rep["requests"])
			}
			if rep["succeeded"].(float64) < 1 {
				t.Errorf("succeeded = %v, want some", rep["succeeded"])
			}
			if rep["linearizable"] != true {
				t.Errorf("linearizable = %v, want true", rep["linearizable"])
			}
			for _, k := range []string{"conflicts", "errors", "double_booked_seats", "lost_bookings", "throughput_rps", "parallelism"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("report has no %q", k)
				}
			}
			lat := rep["latency_ms"].(map[string]any)
			for _, k := range []string{"p50", "p90", "p99", "p999", "max"} {
				if _, ok := lat[k]; !ok {
					t.Errorf("latency_ms has no %q", k)
				}
			}
		})
	}
}

func TestRunDoubleBookingServerExitsOne(t *testing.T) {
	f := &fakeAPI{}
	f.doubleBook.Store(true)
	url := newFakeAPI(t, f)
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "hot", "-seats", "2",
		"-clients", "8", "-requests", "200", "-json")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
	}
	rep := decodeReport(t, stdout)
	if rep["double_booked_seats"].(float64) < 1 || rep["lost_bookings"].(float64) < 1 {
		t.Errorf("double_booked_seats = %v, lost_bookings = %v, want both > 0", rep["double_booked_seats"], rep["lost_bookings"])
	}
	if rep["linearizable"] != false {
		t.Errorf("linearizable = %v, want false", rep["linearizable"])
	}
	if !strings.Contains(stderr, "verification failed") {
		t.Errorf("stderr = %q, want the verification failure", stderr)
	}
}

func TestRunTextReport(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{})
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url+","+url, "-clients", "4", "-requests", "50")
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	for _, want := range []string{"double-booked seats", "lost bookings", "p99.9", "linearizable", "CLEAN", "seat_taken"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}
}

// The text report's last line is the verdict, and it matches the exit
// status: CLEAN with 0, HARMED and the harms with 0, FAILED and what
// failed with 1.
func TestRunVerdictLine(t *testing.T) {
	doubleBooking := &fakeAPI{}
	doubleBooking.doubleBook.Store(true)
	for _, tc := range []struct {
		name   string
		api    *fakeAPI
		args   []string
		code   int
		result string // a regexp for the line
	}{
		{"clean", &fakeAPI{}, []string{"-seats", "2"}, 0, `^result +CLEAN$`},
		{"double-booked and lost", doubleBooking, []string{"-seats", "2"}, 1,
			`^result +FAILED: DOUBLE-BOOKED \(2 seats\), LOST \([0-9]+ bookings\); also NOT LINEARIZABLE \(2 seats\); exit status 1$`},
		{"booked against a refusal", &fakeAPI{refuseAfterBooking: 5}, []string{"-scenario", "spread"}, 1,
			`^result +FAILED: BOOKED AGAINST A REFUSAL \(10 seats\); also NOT LINEARIZABLE \(10 seats\); exit status 1$`},
		{"errors are harm, not failure", &fakeAPI{failConflicts: 4}, []string{"-seats", "2"}, 0,
			`^result +HARMED: ERRORS \([0-9]+ requests\); exit status 0$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := newFakeAPI(t, tc.api)
			code, stdout, stderr := runLoadgen(t, nil, append([]string{"-targets", url, "-clients", "4", "-requests", "50"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if last := lines[len(lines)-1]; !regexp.MustCompile(tc.result).MatchString(last) {
				t.Errorf("last line %q, want %s", last, tc.result)
			}
		})
	}
}

func TestRunOpenLoopAndDuration(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{})
	t.Run("open loop", func(t *testing.T) {
		code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread",
			"-rate", "400", "-requests", "80", "-clients", "4", "-json")
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		rep := decodeReport(t, stdout)
		if rep["mode"] != "open" || rep["requests"] != 80.0 || rep["succeeded"] != 80.0 {
			t.Errorf("mode %v, requests %v, succeeded %v; want open, 80, 80", rep["mode"], rep["requests"], rep["succeeded"])
		}
	})
	t.Run("duration", func(t *testing.T) {
		code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "mixed",
			"-duration", "200ms", "-clients", "4", "-json")
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		if rep := decodeReport(t, stdout); rep["requests"].(float64) < 1 {
			t.Errorf("requests = %v, want some", rep["requests"])
		}
	})
}

func TestRunParallelismFromPaymentDelay(t *testing.T) {
	// The fake holds one mutex through the payment: like the global
	// strategy, at most one booking is in a critical section at a time.
	url := newFakeAPI(t, &fakeAPI{})
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread",
		"-payment-delay", "20ms", "-clients", "4", "-requests", "30", "-json")
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	rep := decodeReport(t, stdout)
	if rep["parallelism_basis"] != "payment_delay" || rep["payment_delay_ms"] != 20.0 {
		t.Fatalf("basis %v, delay %v", rep["parallelism_basis"], rep["payment_delay_ms"])
	}
	if p := rep["parallelism"].(float64); p <= 0 || p > 1.05 {
		t.Errorf("parallelism = %v under a global lock, want at most 1", p)
	}
}

func TestRunExistingScreeningGrowsIntoFreshOnes(t *testing.T) {
	f := &fakeAPI{}
	url := newFakeAPI(t, f)
	c := newClient(1, 1, 5*time.Second, "")
	s, err := c.createScreening(context.Background(), url, createScreening{Movie: "small", Rows: 2, SeatsPerRow: 3})
	if err != nil {
		t.Fatal(err)
	}
	// A booking made before the run: loadgen must not count it against
	// the server, nor its own 409 on that seat.
	if a := c.book(context.Background(), url, s.ID, []string{"A2"}, "early"); a.status != 201 {
		t.Fatalf("preparing: %+v", a)
	}
	code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread",
		"-screening", s.ID, "-clients", "3", "-requests", "10", "-json")
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s\n%s", code, stderr, stdout)
	}
	rep := decodeReport(t, stdout)
	if n := len(rep["screenings"].([]any)); n != 2 {
		t.Errorf("used %d screenings, want 2 (6 seats, then a fresh one)", n)
	}
	if rep["succeeded"] != 9.0 || rep["conflicts"] != 1.0 || rep["linearizable"] != true {
		t.Errorf("succeeded %v conflicts %v linearizable %v, want 9, 1, true", rep["succeeded"], rep["conflicts"], rep["linearizable"])
	}
}

func TestRunLostAnswers(t *testing.T) {
	t.Run("503 after booking is explained", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{failAfterBooking: 3})
		code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread", "-clients", "4", "-requests", "60", "-json")
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		rep := decodeReport(t, stdout)
		if rep["phantom_seats_explained"] != 20.0 || rep["ambiguous"] != 20.0 || rep["linearizable"] != true {
			t.Errorf("explained %v ambiguous %v linearizable %v, want 20, 20, true",
				rep["phantom_seats_explained"], rep["ambiguous"], rep["linearizable"])
		}
	})
	t.Run("503 instead of 409 on a hot seat is harmless", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{failConflicts: 4})
		code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-seats", "2", "-clients", "8", "-requests", "200", "-json")
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		if rep := decodeReport(t, stdout); rep["ambiguous"].(float64) < 10 || rep["linearizable"] != true {
			t.Errorf("ambiguous %v linearizable %v, want many, true", rep["ambiguous"], rep["linearizable"])
		}
	})
	t.Run("409 after booking is an error", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{refuseAfterBooking: 5})
		code, stdout, stderr := runLoadgen(t, nil, "-targets", url, "-scenario", "spread", "-clients", "4", "-requests", "50", "-json")
		if code != 1 {
			t.Fatalf("exit %d, want 1; stderr: %s", code, stderr)
		}
		if rep := decodeReport(t, stdout); rep["phantom_seats_contradicted"] != 10.0 {
			t.Errorf("contradicted = %v, want 10", rep["phantom_seats_contradicted"])
		}
	})
}

func TestRunUnreachableTargetExitsTwo(t *testing.T) {
	// Port 1 needs root to bind, so no other test's server can answer
	// there during the wait, as one could on a port freed a moment ago.
	const addr = "127.0.0.1:1"
	began := time.Now()
	code, stdout, stderr := runLoadgen(t, nil, "-targets", "http://"+addr, "-requests", "10")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "unreachable") {
		t.Errorf("want one line on stderr about the unreachable target, got stdout %q stderr %q", stdout, stderr)
	}
	// It waited for the target to come up, but not for ever.
	if took := time.Since(began); took < startupWait-time.Second || took > startupWait+10*time.Second {
		t.Errorf("gave up after %v, want about %v", took.Round(time.Millisecond), startupWait)
	}
}

// A target that starts answering a moment after loadgen starts (an
// instance still starting, as in a script that starts the servers and
// loadgen together) is waited for, not declared unreachable.
func TestRunWaitsForATargetStillStarting(t *testing.T) {
	addr := freeAddr(t)
	srv := httptest.NewUnstartedServer((&fakeAPI{}).handler())
	listening := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err == nil {
			srv.Listener.Close()
			srv.Listener = l
			srv.Start()
		}
		listening <- err
	}()
	t.Cleanup(func() {
		if <-listening == nil {
			srv.Close()
		}
	})
	code, _, stderr := runLoadgen(t, nil, "-targets", "http://"+addr, "-clients", "2", "-requests", "10")
	if code != 0 {
		t.Fatalf("exit %d, want 0 once the target answers; stderr: %s", code, stderr)
	}
}

// freeAddr returns a loopback address that nothing listens on: one its
// own listener held a moment ago, so another may take it before the caller
// binds it.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestRunAdminToken(t *testing.T) {
	url := newFakeAPI(t, &fakeAPI{adminToken: "s3cret"})
	args := []string{"-targets", url, "-clients", "2", "-requests", "10"}
	t.Run("from ADMIN_TOKEN", func(t *testing.T) {
		if code, _, stderr := runLoadgen(t, map[string]string{"ADMIN_TOKEN": "s3cret"}, args...); code != 0 {
			t.Errorf("exit %d; stderr: %s", code, stderr)
		}
	})
	t.Run("from -admin-token", func(t *testing.T) {
		if code, _, stderr := runLoadgen(t, nil, append(args, "-admin-token", "s3cret")...); code != 0 {
			t.Errorf("exit %d; stderr: %s", code, stderr)
		}
	})
	t.Run("missing", func(t *testing.T) {
		code, _, stderr := runLoadgen(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, "ADMIN_TOKEN") {
			t.Errorf("exit %d, want 2 with a hint; stderr: %s", code, stderr)
		}
	})
}

func TestCompare(t *testing.T) {
	args := []string{"compare", "-scenario", "hot", "-seats", "2", "-clients", "6", "-requests", "60", "-payment-delay", "1ms", "-json"}
	t.Run("not demo mode: unsafe strategies refused", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{})
		code, stdout, stderr := runLoadgen(t, nil, append(args, "-targets", url)...)
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s", code, stderr)
		}
		results := compareResults(t, stdout)
		if len(results) != len(compareStrategies()) {
			t.Fatalf("%d results, want %d", len(results), len(compareStrategies()))
		}
		for _, r := range results {
			s := strategy{r["strategy"].(string), r["guard"].(string)}
			refused, _ := r["refused"].(string)
			if s.safe() == (refused != "") {
				t.Errorf("%v: refused = %q", s, refused)
			}
			if !s.safe() && refused != "server not in demo mode" {
				t.Errorf("%v: refused = %q, want server not in demo mode", s, refused)
			}
		}
	})
	t.Run("demo mode: unsafe strategies double-book, exit 0", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{demo: true})
		code, stdout, stderr := runLoadgen(t, nil, append(args, "-targets", url)...)
		if code != 0 {
			t.Fatalf("exit %d; stderr: %s\n%s", code, stderr, stdout)
		}
		for _, r := range compareResults(t, stdout) {
			s := strategy{r["strategy"].(string), r["guard"].(string)}
			double := r["double_booked_seats"].(float64)
			if r["refused"] != nil || s.safe() != (double == 0) {
				t.Errorf("%v: refused %v, double_booked_seats %v", s, r["refused"], double)
			}
		}
	})
	t.Run("safe strategy double-books: exit 1", func(t *testing.T) {
		f := &fakeAPI{}
		f.doubleBook.Store(true)
		url := newFakeAPI(t, f)
		code, _, stderr := runLoadgen(t, nil, append(args, "-targets", url)...)
		if code != 1 || !strings.Contains(stderr, "keyed+redis/fence") {
			t.Fatalf("exit %d, want 1 naming the safe strategies; stderr: %s", code, stderr)
		}
	})
	t.Run("text table", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{})
		code, stdout, _ := runLoadgen(t, nil, append(args[:len(args)-1], "-targets", url)...)
		if code != 0 || !strings.Contains(stdout, "DOUBLE-BOOKED") || !strings.Contains(stdout, "\n[1] refused: server not in demo mode\n") ||
			strings.Count(stdout, "refused [1]") != 4 {
			t.Errorf("exit %d, want the four refused strategies sharing note [1]; table:\n%s", code, stdout)
		}
		// Refused rows must not shift the columns of the others: every
		// row starts its columns where the header does.
		lines := strings.Split(stdout, "\n")
		for _, col := range []string{"BOOKED", "ERRORS", "LOST", "REQ/S", "VERDICT"} {
			at := len([]rune(lines[0][:strings.Index(lines[0], col)]))
			for _, l := range lines[1:] {
				if l == "" {
					break
				}
				if r := []rune(l); len(r) <= at || r[at-1] != ' ' || r[at] == ' ' {
					t.Errorf("column %s starts at %d in the header but not in the row %q", col, at, l)
				}
			}
		}
	})
	t.Run("-lock is a usage error", func(t *testing.T) {
		code, _, _ := runLoadgen(t, nil, "compare", "-lock", "keyed")
		if code != 2 {
			t.Errorf("exit %d, want 2", code)
		}
	})
}

// -wide prints every column and each strategy's whole verdict on its
// row; it is a flag of compare only.
func TestCompareWide(t *testing.T) {
	args := []string{"compare", "-scenario", "hot", "-seats", "2", "-clients", "6", "-requests", "60", "-payment-delay", "1ms"}
	t.Run("wide table: every column, the whole verdict on the row", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{})
		code, stdout, _ := runLoadgen(t, nil, append(args, "-targets", url, "-wide")...)
		for _, want := range []string{"CONFLICTS", "LINEARIZABLE", "refused: server not in demo mode\n", "CLEAN\n"} {
			if code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("exit %d, the wide table lacks %q:\n%s", code, want, stdout)
			}
		}
		if strings.Contains(stdout, "[1]") {
			t.Errorf("the wide table has notes:\n%s", stdout)
		}
	})
	t.Run("-wide is for compare only", func(t *testing.T) {
		if code, _, stderr := runLoadgen(t, nil, "-wide"); code != 2 || !strings.Contains(stderr, "-wide") {
			t.Errorf("exit %d, stderr %q; want 2 naming -wide", code, stderr)
		}
	})
}

func compareResults(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	return out.Results
}

// TestRunPinClients runs one client against two targets: with
// -pin-clients every booking goes to the first target, the client's own;
// without it, request i goes to target i mod 2, so both get bookings.
func TestRunPinClients(t *testing.T) {
	for _, pin := range []bool{false, true} {
		t.Run(fmt.Sprintf("pin=%v", pin), func(t *testing.T) {
			h := (&fakeAPI{}).handler()
			var bookings [2]atomic.Int64
			var urls []string
			for i := range bookings {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/bookings") {
						bookings[i].Add(1)
					}
					h.ServeHTTP(w, r)
				}))
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			args := []string{"-targets", strings.Join(urls, ","), "-scenario", "spread", "-clients", "1", "-requests", "20", "-json"}
			if pin {
				args = append(args, "-pin-clients")
			}
			if code, stdout, stderr := runLoadgen(t, nil, args...); code != 0 {
				t.Fatalf("exit %d, want 0; stderr: %s\n%s", code, stderr, stdout)
			}
			first, second := bookings[0].Load(), bookings[1].Load()
			if first+second != 20 {
				t.Fatalf("%d + %d bookings reached the targets, want 20", first, second)
			}
			if pin && second != 0 {
				t.Errorf("pinned client 0 sent %d of its 20 bookings to target 1, want all to target 0", second)
			}
			if !pin && (first != 10 || second != 10) {
				t.Errorf("round robin sent %d and %d bookings, want 10 and 10", first, second)
			}
		})
	}
}
