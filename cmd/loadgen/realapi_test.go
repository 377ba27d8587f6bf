package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
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
	if testing.Short() {
		t.Skip("builds and starts the API; skipped with -short")
	}
	env := []string{
		"DATABASE_URL=" + testenv.NewDatabase(t),
		"REDIS_URL=" + testenv.RedisURL(t),
		"DEMO_MODE=true",
	}
	bin := buildAPI(t)
	targets := strings.Join([]string{startAPI(t, bin, env), startAPI(t, bin, env)}, ",")

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

// buildAPI builds cmd/api into a temporary directory.
func buildAPI(t *testing.T) string { return buildBinary(t, "api") }

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

// startProcess starts cmd and returns the first match of addr's group in
// its standard error: the address it listens on. The process gets SIGTERM,
// and is waited for, when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd, addr *regexp.Regexp) string {
	t.Helper()
	return startLogged(t, cmd).await(t, addr)
}
