//go:build unix

package testenv_test

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestNeedsRedis is the integration test that TestRunSaysWhatWasSkipped
// runs in a child process without a server; on its own it does nothing.
func TestNeedsRedis(t *testing.T) {
	if os.Getenv("SEATLOCK_TESTENV_CHILD") != "1" {
		return
	}
	testenv.RedisURL(t)
	t.Error("a Redis URL without any server")
}

// runChild runs this test binary again as the child that runs
// TestNeedsRedis with no server, no Docker engine and no terminal, through
// bash -c script (the binary is $0, and may write to the shell's stdout as
// to go test's), and returns its exit code and the shell's output. Not sh:
// dash redirects a command's output in the shell itself, so that the
// child would find its own output as its parent's.
func runChild(t *testing.T, require, script string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to run the child under")
	}
	cmd := exec.Command(bash, "-c", script, os.Args[0])
	cmd.Env = []string{"SEATLOCK_TESTENV_CHILD=1", "DOCKER_HOST=unix:///nonexistent/docker.sock",
		"REQUIRE_INTEGRATION=" + require, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	// A session of its own has no terminal to fall back on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// wantSummary is what Run says of TestNeedsRedis skipped.
const wantSummary = `./internal/testenv: 1 integration test skipped for want of Redis:
	TestNeedsRedis
	run it with: TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test ./internal/testenv
`

// TestRunSaysWhatWasSkipped runs the child by hand: the skipped test
// passes, and the output ends with the summary. With
// REQUIRE_INTEGRATION=1 the same test fails instead, with no summary.
func TestRunSaysWhatWasSkipped(t *testing.T) {
	const byHand = `exec "$0" -test.run='^TestNeedsRedis$'`
	code, out := runChild(t, "", byHand)
	if code != 0 || !strings.HasSuffix(out, wantSummary) {
		t.Errorf("without servers: exit %d, output\n%s\nwant 0, ending in\n%s", code, out, wantSummary)
	}
	code, out = runChild(t, "1", byHand)
	if code != 1 || strings.Contains(out, "skipped") {
		t.Errorf("with REQUIRE_INTEGRATION=1: exit %d; want 1 and no summary\n%s", code, out)
	}
}

// TestRunShowsWhatGoTestHides runs the child as go test runs it
// (-test.paniconexit0), with its own output dropped as go test drops a
// passing package's: the summary still reaches the stdout of the process
// that started it, once. With -test.v, which go test shows, it does not.
func TestRunShowsWhatGoTestHides(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stdout of go test is reached through /proc, on Linux only")
	}
	const asGoTest = `"$0" -test.paniconexit0 -test.run='^TestNeedsRedis$' >/dev/null 2>&1; exit $?`
	if code, out := runChild(t, "", asGoTest); code != 0 || out != wantSummary {
		t.Errorf("a passing package under go test: exit %d, output\n%s\nwant 0 and\n%s", code, out, wantSummary)
	}
	const verbose = `"$0" -test.paniconexit0 -test.v -test.run='^TestNeedsRedis$' >/dev/null 2>&1; exit $?`
	if code, out := runChild(t, "", verbose); code != 0 || out != "" {
		t.Errorf("with -test.v: exit %d, output %q; want 0 and nothing beside the binary's own", code, out)
	}
}
