//go:build unix

package testenv_test

import (
	"errors"
	"os"
	"os/exec"
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

// TestRunSaysWhatWasSkipped runs this test binary again with no server, no
// Docker engine and no terminal: the skipped test passes, and the last
// line says that one integration test was skipped and how to run it. With
// REQUIRE_INTEGRATION=1 the same test fails instead, with no such line.
func TestRunSaysWhatWasSkipped(t *testing.T) {
	run := func(require string) (int, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeedsRedis$")
		cmd.Env = []string{"SEATLOCK_TESTENV_CHILD=1", "DOCKER_HOST=unix:///nonexistent/docker.sock",
			"REQUIRE_INTEGRATION=" + require, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		// A session of its own has no terminal: the line goes to stderr.
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

	code, out := run("")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != 0 || !strings.Contains(last, "1 integration tests skipped") || !strings.Contains(last, "REQUIRE_INTEGRATION=1 go test ./...") {
		t.Errorf("without servers: exit %d, last line %q; want 0 and the skip line\n%s", code, last, out)
	}
	code, out = run("1")
	if code != 1 || strings.Contains(out, "integration tests skipped") {
		t.Errorf("with REQUIRE_INTEGRATION=1: exit %d; want 1 and no skip line\n%s", code, out)
	}
}
