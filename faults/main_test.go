package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// binaries are the programs TestMain builds once for the whole test
// binary. TestMain writes them before any test runs; tests only read them.
var binaries struct {
	api     string
	loadgen string // built only when the load test will run
}

// faultTest skips t with -short: a fault test starts servers of its own
// and runs for seconds.
func faultTest(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("fault test")
	}
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

// runMain builds the binaries into a temporary directory, runs the tests
// and removes the directory: a function of its own so that its defers run
// before os.Exit.
func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "seatlock-faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	pkgs := []string{"github.com/seatlock/seatlock/cmd/api"}
	binaries.api = filepath.Join(dir, "api")
	if os.Getenv(loadBookingsEnv) != "" {
		pkgs = append(pkgs, "github.com/seatlock/seatlock/cmd/loadgen")
		binaries.loadgen = filepath.Join(dir, "loadgen")
	}
	// The binaries are built without -race even under go test -race: they
	// are the system under test, run as a deployment runs them, and the
	// race detector would only slow the faults down.
	build := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "faults: go build:", err)
		return 1
	}
	return testenv.Run(m)
}

// httpClient sends the tests' requests. Its timeout bounds a request that
// hangs on a stopped process; every fault ends well before it.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// instance is one API process started by startAPI.
type instance struct {
	url  string
	cmd  *exec.Cmd
	logs *testenv.LogWatcher
	// exited is closed when the process has ended and its stderr is read.
	exited chan struct{}
}

// startAPI starts the API binary as a child process with the given
// environment on 127.0.0.1:0 and returns once /healthz answers. The
// process is killed (SIGKILL) when t ends, whatever state it is in; its
// log is printed if t failed.
func startAPI(t *testing.T, env map[string]string) *instance {
	t.Helper()
	cmd := exec.Command(binaries.api)
	// Only what the test gives it: a REDIS_URL or DATABASE_URL of the
	// test's own environment must not leak into the instance.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "ADDR=127.0.0.1:0"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := testenv.NewLogWatcher()
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start api: %v", err)
	}
	inst := &instance{cmd: cmd, logs: logs, exited: make(chan struct{})}
	// The waiter is owned by this instance: Cleanup waits for exited.
	go func() {
		_ = cmd.Wait()
		close(inst.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // works on a stopped process too
		select {
		case <-inst.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("api pid %d did not exit within 10s of SIGKILL", cmd.Process.Pid)
		}
		if t.Failed() {
			t.Logf("log of api pid %d:\n%s", cmd.Process.Pid, logs.Tail(6<<10))
		}
	})

	select {
	case inst.url = <-logs.Addr():
	case <-inst.exited:
		t.Fatalf("api exited at start:\n%s", logs.Tail(4<<10))
	case <-time.After(60 * time.Second):
		t.Fatalf("api printed no listening line within 60s:\n%s", logs.Tail(4<<10))
	}
	waitFor(t, 10*time.Second, inst.url+"/healthz is OK", func() bool {
		return getStatus(inst.url+"/healthz") == http.StatusOK
	})
	return inst
}

// signal sends sig to the instance's process.
func (i *instance) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := i.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to pid %d: %v", sig, i.cmd.Process.Pid, err)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (i *instance) kill(t *testing.T) {
	t.Helper()
	i.signal(t, syscall.SIGKILL)
	select {
	case <-i.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("pid %d still there 10s after SIGKILL", i.cmd.Process.Pid)
	}
}

// waitFor is wait.For, by the name the fault tests call it.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	wait.For(t, timeout, what, cond)
}

// getStatus returns the status of a GET, or 0 when nothing answered.
func getStatus(url string) int {
	res, err := httpClient.Get(url)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// The JSON of the API, as much of it as the faults read.
type (
	screening struct {
		ID             string `json:"id"`
		Lock           string `json:"lock"`
		Guard          string `json:"guard"`
		PaymentDelayMS int64  `json:"payment_delay_ms"`
	}
	seat struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		BookingID string `json:"booking_id"`
	}
	booking struct {
		ID       string   `json:"id"`
		Seats    []string `json:"seats"`
		Customer string   `json:"customer"`
		Token    string   `json:"token"` // only in a 201
	}
	apiError struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
)

// createScreening posts body to base and returns the screening created.
func createScreening(t *testing.T, base, body string) screening {
	t.Helper()
	res, err := httpClient.Post(base+"/v1/screenings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("create screening: %v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create screening %s: %d %s", body, res.StatusCode, raw)
	}
	var s screening
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("create screening: %v in %s", err, raw)
	}
	return s
}

// seatMap returns the seats of a screening by id, as base sees them.
func seatMap(t *testing.T, base, screeningID string) map[string]seat {
	t.Helper()
	res, err := httpClient.Get(base + "/v1/screenings/" + screeningID + "/seats")
	if err != nil {
		t.Fatalf("seat map: %v", err)
	}
	defer res.Body.Close()
	var body struct {
		Seats []seat `json:"seats"`
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("seat map: status %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("seat map: %v", err)
	}
	m := make(map[string]seat, len(body.Seats))
	for _, s := range body.Seats {
		m[s.ID] = s
	}
	return m
}

// answer is the outcome of one booking request.
type answer struct {
	seats      []string
	sent, done time.Time
	status     int    // 0 when no answer came
	code       string // error code of a non-201 answer
	booking    booking
	err        error // transport error when status is 0
}

func (a answer) latency() time.Duration { return a.done.Sub(a.sent) }

func (a answer) String() string {
	if a.status == 0 {
		return fmt.Sprintf("%v: no answer (%v)", a.seats, a.err)
	}
	return fmt.Sprintf("%v: %d %s", a.seats, a.status, a.code)
}

// book sends one booking request and reads its answer.
func book(ctx context.Context, base, screeningID, customer string, seats ...string) answer {
	return bookKeyed(ctx, base, screeningID, customer, "", seats...)
}

// bookKeyed is book with the request's Idempotency-Key; an empty key sends
// none.
func bookKeyed(ctx context.Context, base, screeningID, customer, key string, seats ...string) answer {
	a := answer{seats: seats, sent: time.Now()}
	defer func() { a.done = time.Now() }()
	body, _ := json.Marshal(map[string]any{"seats": seats, "customer": customer})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/screenings/"+screeningID+"/bookings", bytes.NewReader(body))
	if err != nil {
		a.err = err
		a.done = time.Now()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := httpClient.Do(req)
	if err != nil {
		a.err = err
		a.done = time.Now()
		return a
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	a.done = time.Now()
	if err != nil {
		a.err = err
		return a
	}
	a.status = res.StatusCode
	if a.status == http.StatusCreated {
		if err := json.Unmarshal(raw, &a.booking); err != nil {
			a.err = fmt.Errorf("201 with a body that is not a booking: %w", err)
		}
		return a
	}
	var e apiError
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" {
		a.err = errors.New("error answer not in the contract's shape: " + string(raw))
	}
	a.code = e.Error.Code
	return a
}

// bookAsync sends a booking in a goroutine; the channel receives its answer.
// The goroutine is owned by the caller, which must receive from the channel.
func bookAsync(base, screeningID, customer string, seats ...string) <-chan answer {
	c := make(chan answer, 1)
	go func() { c <- book(context.Background(), base, screeningID, customer, seats...) }()
	return c
}

// receive waits for an answer from bookAsync, at most timeout.
func receive(t *testing.T, c <-chan answer, timeout time.Duration) answer {
	t.Helper()
	return wait.Recv(t, c, timeout, "an answer")
}

// cancelBooking cancels a booking with its token, and fails t unless the
// answer is 204.
func cancelBooking(t *testing.T, base, id, token string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, base+"/v1/bookings/"+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("cancel %s: %v", id, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("cancel %s: %d %s", id, res.StatusCode, raw)
	}
}
