package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// The verdict against the real server: two instances of cmd/api, built
// from this tree, on one Redis and one fresh Postgres database. A safe
// strategy must come out clean, and the unsafe demo must be caught by both
// the counters and porcupine. A verifier that passed everything would fail
// the second half.
func TestVerdictAgainstRealAPI(t *testing.T) {
	targets := startTwoAPIs(t, buildAPI(t), "DEMO_MODE=true")

	t.Run("safe strategy is clean and exits 0", func(t *testing.T) {
		rep, err := runJSON(t, "-targets", targets, "-scenario", "hot", "-seats", "2",
			"-clients", "16", "-requests", "300", "-payment-delay", "2ms")
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if rep.Succeeded != 2 || rep.DoubleBookedSeats != 0 || rep.LostBookings != 0 {
			t.Errorf("succeeded %d, double-booked %d, lost %d; want 2, 0, 0", rep.Succeeded, rep.DoubleBookedSeats, rep.LostBookings)
		}
		if rep.Linearizable != linearizable {
			t.Errorf("linearizable %q, want true", rep.Linearizable)
		}
	})

	t.Run("unsafe strategy is caught and exits 1", func(t *testing.T) {
		rep, err := runJSON(t, "-targets", targets, "-scenario", "hot", "-seats", "1",
			"-clients", "16", "-requests", "64", "-lock", "none", "-guard", "off", "-payment-delay", "50ms")
		if !errors.Is(err, errUnsafe) {
			t.Fatalf("run: %v, want the unsafe verdict", err)
		}
		if code := exitStatus(err, io.Discard); code != 1 {
			t.Errorf("exit status %d, want 1", code)
		}
		if rep.DoubleBookedSeats != 1 || rep.Succeeded < 2 {
			t.Errorf("double-booked %d with %d confirmed; want the one hot seat confirmed several times", rep.DoubleBookedSeats, rep.Succeeded)
		}
		if rep.Linearizable != notLinearizable {
			t.Errorf("porcupine said linearizable %q, want false", rep.Linearizable)
		}
	})
}

// runJSON runs loadgen with -json and decodes its report.
func runJSON(t *testing.T, args ...string) (*report, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, append([]string{"-json"}, args...), func(string) string { return "" }, &out, &errOut)
	var rep report
	if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
		t.Fatalf("report is not JSON (%v): %s\nstderr: %s\nrun: %v", jerr, out.String(), errOut.String(), err)
	}
	return &rep, err
}

// buildAPI builds cmd/api into a temporary directory. It skips t under
// -short: a test that runs the API as a process takes seconds.
func buildAPI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts the API; skipped with -short")
	}
	return buildBinary(t, "api")
}

// buildBinary builds cmd/<name> into a temporary directory.
func buildBinary(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "github.com/seatlock/seatlock/cmd/"+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

var listening = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// startAPI starts one API instance on a free port and returns its base URL
// once it answers.
func startAPI(t *testing.T, bin string, env []string) string {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), append([]string{"ADDR=127.0.0.1:0"}, env...)...)
	return startProcess(t, cmd, listening)
}

// startTwoAPIs starts two instances of bin on one fresh Postgres database
// and one Redis, with extra settings added to their environment, and
// returns their base URLs as a -targets value.
func startTwoAPIs(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	env := append([]string{"DATABASE_URL=" + testenv.NewDatabase(t), "REDIS_URL=" + testenv.RedisURL(t)}, extra...)
	return startAPI(t, bin, env) + "," + startAPI(t, bin, env)
}

// startProcess starts cmd and returns the first match of addr's group in
// its standard error: the address it listens on. The process gets SIGTERM,
// and is waited for, when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd, addr *regexp.Regexp) string {
	t.Helper()
	return startLogged(t, cmd).await(t, addr)
}

// The run over time against a real fault: one API instance whose Redis
// (its lock service) is killed for a second mid-run and started again on
// the same port, the window appended to the -faults file by the test as a
// fault injector would. The timeline must show the run clean before the
// window, errors inside it, bookings again after it, and the window in
// the JSON and shaded in the HTML.
func TestTimelineThroughARedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the API and a Redis server; skipped with -short")
	}
	redisSrv := testenv.StartRedisServer(t, nil)
	env := []string{
		"DATABASE_URL=" + testenv.NewDatabase(t),
		"REDIS_URL=redis://" + redisSrv.Addr + "/0",
		"LOCK_STRATEGY=redis",
	}
	target := startAPI(t, buildAPI(t), env)
	dir := t.TempDir()
	faults, htmlFile := filepath.Join(dir, "faults.jsonl"), filepath.Join(dir, "run.html")
	if err := os.WriteFile(faults, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	injected := make(chan error, 1)
	go func() { injected <- redisOutage(t, redisSrv, faults, 1500*time.Millisecond, time.Second) }()
	rep, err := runJSON(t, "-targets", target, "-scenario", "spread", "-rate", "100", "-clients", "16",
		"-duration", "5s", "-timeout", "3s", "-payment-delay", "2ms", "-faults", faults, "-html", htmlFile)
	if ierr := <-injected; ierr != nil {
		t.Fatalf("injecting the fault: %v", ierr)
	}
	if err != nil {
		t.Fatalf("run: %v (a Redis outage must cost availability, never safety)", err)
	}
	tl := rep.Timeline
	if tl == nil || len(tl.Faults) != 1 {
		t.Fatalf("timeline %+v, want one fault window", tl)
	}
	f := tl.Faults[0]
	var before, during, after int
	for _, b := range tl.Buckets {
		errs := b.Errors503 + b.ErrorsOther
		switch end := b.StartS + tl.BucketS; {
		case end <= f.StartS:
			if errs != 0 {
				t.Errorf("bucket at %vs, before the outage: %d errors", b.StartS, errs)
			}
			before += b.Succeeded
		case b.StartS < f.EndS:
			during += errs
		case b.StartS >= f.EndS+time.Second.Seconds():
			after += b.Succeeded
		}
	}
	if before == 0 || during == 0 || after == 0 {
		t.Errorf("confirmed before the outage %d, errors during it %d, confirmed a second after it %d; want all > 0\n%+v",
			before, during, after, tl.Buckets)
	}
	page, err := os.ReadFile(htmlFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<rect class="fault" data-fault="redis down"`) {
		t.Error("the HTML report does not shade the outage")
	}
}

// redisOutage kills s after wait, starts a new redis-server on its port
// after down, and appends the window to the faults file. The new server is
// stopped when t ends.
func redisOutage(t *testing.T, s *testenv.RedisServer, faults string, wait, down time.Duration) error {
	time.Sleep(wait)
	from := time.Now()
	s.Stop()
	time.Sleep(down)
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command("redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		return err
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// The window ends when the new server answers.
	for range 100 {
		if c, err := net.Dial("tcp", s.Addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	line, err := json.Marshal(faultLine{Name: "redis down", Start: from, End: time.Now()})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(faults, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
