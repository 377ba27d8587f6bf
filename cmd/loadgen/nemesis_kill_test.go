package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
)

// nemesisHelperEnv, when set, makes TestNemesisHelperProcess run loadgen
// with the arguments it holds (separated by spaces) instead of skipping:
// the test binary doubles as a loadgen process that a test can kill.
const nemesisHelperEnv = "SEATLOCK_LOADGEN_HELPER_ARGS"

// TestNemesisHelperProcess is not a test: it is loadgen, run by
// TestNemesisKilledLeavesNoServers in a process of its own.
func TestNemesisHelperProcess(t *testing.T) {
	args := os.Getenv(nemesisHelperEnv)
	if args == "" {
		t.Skip("runs only as the helper process of TestNemesisKilledLeavesNoServers")
	}
	err := run(context.Background(), strings.Fields(args), os.Getenv, os.Stdout, os.Stderr)
	os.Exit(exitStatus(err, os.Stderr))
}

// TestNemesisKilledLeavesNoServers kills (SIGKILL) a loadgen nemesis once
// its cluster is up, so that nothing of its own can stop the cluster, and
// requires every process it started (Postgres and its backends, the Redis
// servers and Sentinels, the API instances) to end with it, and the
// directories it left to be gone once the next nemesis has run.
func TestNemesisKilledLeavesNoServers(t *testing.T) {
	needCluster(t)
	// What the killed loadgen leaves is files only, its work directories
	// and Postgres's: they go in a temporary directory of the test's,
	// which Postgres's user (as root, postgres) must be able to enter.
	// (t.TempDir's parent is closed to other users.)
	tmp, err := os.MkdirTemp("", "seatlock-kill-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNemesisHelperProcess$")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, nemesisHelperEnv+"=nemesis -time 60s -seed 1 -faults latency -out "+t.TempDir())
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { // owned by the test: the cleanup waits for it
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("loadgen's output:\n%s", output.String())
		}
	})

	var children map[int]stat
	up := false
	wait.For(t, 3*time.Minute, "the nemesis's cluster is up (postgres, redis-server and three api processes below loadgen), or loadgen ended", func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		children = descendants(cmd.Process.Pid)
		count := map[string]int{}
		for _, st := range children {
			count[st.name]++
		}
		up = count["postgres"] > 0 && count["redis-server"] >= 2 && count["api"] == 3
		return up
	})
	if !up {
		t.Fatal("loadgen nemesis ended before its cluster was up")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	wait.For(t, 30*time.Second, "every process of the killed nemesis to end", func() bool {
		for pid, st := range children {
			if alive(pid, st) {
				return false
			}
		}
		return true
	})
	names := map[string]int{}
	for _, st := range children {
		names[st.name]++
	}
	t.Logf("%d processes ended with loadgen: %v", len(children), names)

	left, _ := filepath.Glob(filepath.Join(tmp, "seatlock-*"))
	if len(left) == 0 {
		t.Fatal("the killed nemesis left no directory in its TMPDIR: this test no longer sees what it checks")
	}
	t.Logf("the killed nemesis left %d directories: %v", len(left), left)
	nextOutput := runNextNemesis(t, tmp)
	if left, _ := filepath.Glob(filepath.Join(tmp, "seatlock-*")); len(left) > 0 {
		t.Errorf("after the next nemesis, %d directories are left: %v\nits output:\n%s", len(left), left, nextOutput)
	}
}

// runNextNemesis runs a short loadgen nemesis to its end, with tmp as its
// TMPDIR, and returns its output. It fails t when the nemesis could not
// run (exit status 2) or did not end within 5 minutes.
func runNextNemesis(t *testing.T, tmp string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestNemesisHelperProcess$")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, nemesisHelperEnv+"=nemesis -time 10s -seed 1 -faults latency -clients 4 -out "+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the next nemesis did not end within 5 minutes; its output:\n%s", out)
	}
	// Exit status 1, an anomaly, is a verdict on the run: not this test's.
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("the next nemesis could not run: %v; its output:\n%s", err, out)
	}
	return string(out)
}

// descendants returns the processes below pid, by pid, with their names,
// read from /proc.
func descendants(pid int) map[int]stat {
	procs := map[int]stat{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		p, err := strconv.Atoi(filepath.Base(dir))
		if st, ok := readStat(p); err == nil && ok {
			procs[p] = st
		}
	}
	below := map[int]stat{}
	for changed := true; changed; {
		changed = false
		for p, st := range procs {
			_, known := below[p]
			if _, under := below[st.parent]; !known && (st.parent == pid || under) {
				below[p] = st
				changed = true
			}
		}
	}
	return below
}

// stat is what /proc/PID/stat says of a process.
type stat struct {
	name   string
	state  string // "Z" for a zombie
	parent int
}

// readStat reads the stat of process pid; false when it has gone.
func readStat(pid int) (stat, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// "pid (name) state ppid ...": the name may hold spaces and
	// parentheses, so it ends at the last ')'.
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return stat{}, false
	}
	parent, err := strconv.Atoi(fields[1])
	if err != nil {
		return stat{}, false
	}
	return stat{name: s[open+1 : end], state: fields[0], parent: parent}, true
}

// alive reports whether process pid is still the process was: a zombie,
// ended and waiting for whoever adopted it to reap it, is not alive, and
// neither is another program that reuses the pid.
func alive(pid int, was stat) bool {
	st, ok := readStat(pid)
	return ok && st.name == was.name && st.state != "Z"
}
