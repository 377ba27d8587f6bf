package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// TestMain lets a test run main itself in a child process, to see real
// exit statuses: the child is this test binary with SEATLOCK_TEST_MAIN=1.
// Otherwise it runs the tests, and says at the end when integration tests
// were skipped.
func TestMain(m *testing.M) {
	if os.Getenv("SEATLOCK_TEST_MAIN") == "1" {
		os.Args = append([]string{"api"}, strings.Fields(os.Getenv("SEATLOCK_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(testenv.Run(m))
}

// instance is one run of the API inside the test process, on a port the
// system chose.
type instance struct {
	url  string
	logs *testenv.LogWatcher
	stop func() error // ends run's context and returns run's error
}

// startAPI runs the API with the given environment and flags (on
// 127.0.0.1:0) and waits until /healthz answers. The instance stops when
// the test ends, and the test fails if run then returns an error.
func startAPI(t *testing.T, env map[string]string, args ...string) *instance {
	t.Helper()
	inst, err := launch(t, defaultLimits(), env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// launch is startAPI without t.Fatal, for starting instances concurrently,
// and with the server's limits given.
func launch(t *testing.T, limits serverLimits, env map[string]string, args ...string) (*instance, error) {
	ctx, cancel := context.WithCancel(context.Background())
	logs := testenv.NewLogWatcher()
	done := make(chan error, 1)
	args = append([]string{"-addr", "127.0.0.1:0"}, args...)
	go func() { done <- runWith(ctx, args, func(k string) string { return env[k] }, io.Discard, logs, limits) }()

	stop := sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(90 * time.Second):
			return errors.New("run did not return within 90s of its context ending")
		}
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
		if t.Failed() {
			t.Logf("API log (%s):\n%s", strings.Join(args, " "), logs.Tail(8<<10))
		}
	})

	var url string
	select {
	case url = <-logs.Addr():
	case err := <-done:
		done <- err // for stop
		return nil, fmt.Errorf("run ended at start: %v\n%s", err, logs.Tail(4<<10))
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("no listening line within 60s\n%s", logs.Tail(4<<10))
	}
	inst := &instance{url: url, logs: logs, stop: stop}
	for deadline := time.Now().Add(10 * time.Second); ; {
		res, err := httpClient.Get(url + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return inst, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s/healthz not OK within 10s: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpClient is shared by the tests; its transport keeps enough idle
// connections for the concurrent tests not to run out of ports.
var httpClient = &http.Client{
	Timeout:   60 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 100},
}

// response is an answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// call sends a request with a raw body (none when body is "") and
// header pairs ("Name", "value", ...).
func call(t testing.TB, method, url, body string, headers ...string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json") // unless headers say otherwise
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if http.CanonicalHeaderKey(headers[i]) == "Content-Type" {
			req.Header.Set(headers[i], headers[i+1])
			continue
		}
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	answer := response{status: res.StatusCode, header: res.Header, body: b}
	checkOpenAPI(t, req, answer)
	// Every JSON answer is a line, so that it reads well after curl and
	// in line-oriented tools; every "not now" says when to come back.
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") && !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s %s: JSON answer %d does not end with a newline: %.200q", method, url, res.StatusCode, b)
	}
	// Messages are the domain's words: none names an adapter.
	if res.StatusCode >= 400 && adapterName.Match(b) {
		t.Errorf("%s %s: answer %d names an adapter: %.300s", method, url, res.StatusCode, b)
	}
	if (res.StatusCode == http.StatusServiceUnavailable || res.StatusCode == http.StatusTooManyRequests) && res.Header.Get("Retry-After") == "" {
		t.Errorf("%s %s: answer %d without Retry-After", method, url, res.StatusCode)
	}
	return answer
}

// adapterName matches the prefix with which an adapter's errors name it.
var adapterName = regexp.MustCompile(`\b(memory|postgres|pgx|pglock|pgconn|redis|miniredis|redlock|zklock|flock|distlock):`)

// decode unmarshals an answer's JSON body into a T.
func decode[T any](t testing.TB, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("answer %d is not the JSON expected: %v\n%s", r.status, err, r.body)
	}
	return v
}

// apiError is the error body of the contract.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"`
	} `json:"error"`
}

// wantError checks that r is an error answer with the status and code, in
// exactly the contract's shape, and returns it.
func wantError(t testing.TB, r response, status int, code string) apiError {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want JSON", ct)
	}
	var shape map[string]map[string]any
	if err := json.Unmarshal(r.body, &shape); err != nil || len(shape) != 1 || shape["error"] == nil {
		t.Fatalf("error body %s is not {\"error\":{...}}", r.body)
	}
	for k := range shape["error"] {
		if k != "code" && k != "message" && !(k == "seats" && (code == "seat_taken" || code == "seat_held")) {
			t.Errorf("error body has unexpected field %q: %s", k, r.body)
		}
	}
	e := decode[apiError](t, r)
	if e.Error.Code != code {
		t.Errorf("code %q, want %q; body %s", e.Error.Code, code, r.body)
	}
	if e.Error.Message == "" {
		t.Errorf("error without a message: %s", r.body)
	}
	return e
}

// The contract's resources, as tests read them.
type screening struct {
	ID             string    `json:"id"`
	Movie          string    `json:"movie"`
	StartsAt       time.Time `json:"starts_at"`
	Rows           int       `json:"rows"`
	SeatsPerRow    int       `json:"seats_per_row"`
	Lock           string    `json:"lock"`
	Guard          string    `json:"guard"`
	PaymentDelayMS int64     `json:"payment_delay_ms"`
}

type seat struct {
	ID        string   `json:"id"`
	Row       string   `json:"row"`
	Number    int      `json:"number"`
	Status    string   `json:"status"`
	BookingID string   `json:"booking_id"`
	Bookings  []string `json:"bookings"`
	// HoldExpiresAt is set for a held seat.
	HoldExpiresAt *time.Time `json:"hold_expires_at"`
}

type seatMap struct {
	ScreeningID string `json:"screening_id"`
	Seats       []seat `json:"seats"`
}

type booking struct {
	ID          string    `json:"id"`
	ScreeningID string    `json:"screening_id"`
	Seats       []string  `json:"seats"`
	Customer    string    `json:"customer"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	Token       string    `json:"token"`
}

// createScreening creates a screening from a JSON body and returns it.
func createScreening(t testing.TB, base, body string, headers ...string) screening {
	t.Helper()
	r := call(t, "POST", base+"/v1/screenings", body, headers...)
	if r.status != http.StatusCreated {
		t.Fatalf("create screening %s: status %d: %s", body, r.status, r.body)
	}
	return decode[screening](t, r)
}

// bookingBody is the JSON of a booking request.
func bookingBody(customer string, seats ...string) string {
	b, _ := json.Marshal(map[string]any{"seats": seats, "customer": customer})
	return string(b)
}

// seatsOf returns a screening's seat map, raw and decoded.
func seatsOf(t testing.TB, base, screeningID string) (string, map[string]seat) {
	t.Helper()
	r := call(t, "GET", base+"/v1/screenings/"+screeningID+"/seats", "")
	if r.status != http.StatusOK {
		t.Fatalf("seat map of %s: status %d: %s", screeningID, r.status, r.body)
	}
	m := map[string]seat{}
	for _, s := range decode[seatMap](t, r).Seats {
		m[s.ID] = s
	}
	return string(r.body), m
}

// waitInFlight waits until the instance serves n booking requests at once,
// which the http_requests_in_flight gauge tells.
func waitInFlight(t testing.TB, base string, n int) {
	t.Helper()
	want := fmt.Sprintf(`http_requests_in_flight{route="/v1/screenings/:id/bookings"} %d`, n)
	wait.For(t, 10*time.Second, "/metrics says "+want, func() bool {
		return strings.Contains(string(call(t, "GET", base+"/metrics", "").body), want)
	})
}
