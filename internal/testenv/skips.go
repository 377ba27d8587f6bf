package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A Need is something an integration test needs that a machine may lack,
// and how a developer provides it: a variable that names a server, a
// package to install, or both.
type Need struct {
	What    string // what is missing, as the summary names it: "Redis", "redis-server"
	Env     string // the assignment that names it: "TEST_REDIS_URL=redis://127.0.0.1:6379/0"
	Install string // the command that installs it: "apt-get install -y redis-server"
}

// needRedisServer is the Need of tests that start redis-server processes
// of their own.
var needRedisServer = Need{What: "redis-server", Install: "apt-get install -y redis-server"}

// Unavailable skips t for want of need, saying why in msg, or fails t
// instead under REQUIRE_INTEGRATION=1. The skip is counted for the summary
// that Run prints.
func Unavailable(t testing.TB, need Need, msg string) {
	t.Helper()
	if os.Getenv("REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	Skip(t, need, msg)
}

// Skip skips t for want of need, saying why in msg, whatever
// REQUIRE_INTEGRATION says, and counts the skip for Run's summary.
func Skip(t testing.TB, need Need, msg string) {
	t.Helper()
	skips.add(t.Name(), need)
	t.Skip(msg)
}

// skipLog gathers the skips of a test binary for its summary.
type skipLog struct {
	mu         sync.Mutex // tests run in parallel
	tests      []string   // the top-level names of the tests skipped, in order, once each
	needs      []Need     // what they lacked, once each
	summarised bool       // Run prints the summary at the end
}

// skips is this test binary's skipLog. Without Run (a package whose
// TestMain does not call it) each skip is shown on its own as it happens,
// since nothing will show them at the end.
var skips skipLog

func (s *skipLog) add(name string, need Need) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.summarised {
		showGoTest(summary([]string{name}, []Need{need}))
	}
	name, _, _ = strings.Cut(name, "/") // a subtest counts as its test
	if !slices.Contains(s.tests, name) {
		s.tests = append(s.tests, name)
	}
	if !slices.Contains(s.needs, need) {
		s.needs = append(s.needs, need)
	}
}

// Run runs the tests of m and returns the exit code for os.Exit. When some
// were skipped for want of a server or a program, it ends with a summary:
// which tests, for want of what, and the one command that runs them.
//
//	./distlock/redlock: 14 integration tests skipped for want of redis-server:
//		TestConformance, TestMajorityDown, ...
//		run them with: apt-get install -y redis-server && go test ./distlock/redlock
func Run(m *testing.M) int {
	skips.mu.Lock()
	skips.summarised = true
	skips.mu.Unlock()
	code := m.Run()
	skips.mu.Lock()
	defer skips.mu.Unlock()
	if len(skips.tests) > 0 {
		s := summary(skips.tests, skips.needs)
		os.Stdout.WriteString(s) // for -v, -json and a failed run
		if code == 0 {
			showGoTest(s)
		}
	}
	return code
}

// summary says that tests were skipped for want of needs, and how to run
// them.
func summary(tests []string, needs []Need) string {
	var what, env, install []string
	for _, n := range needs {
		what = append(what, n.What)
		if n.Env != "" && !slices.Contains(env, n.Env) {
			env = append(env, n.Env)
		}
		if n.Install != "" && !slices.Contains(install, n.Install) {
			install = append(install, n.Install)
		}
	}
	pkg := packageDir()
	cmd := strings.Join(append(env, "go test "+pkg), " ")
	if len(install) > 0 {
		cmd = strings.Join(install, " && ") + " && " + cmd
	}
	noun, them := "integration tests", "them"
	if len(tests) == 1 {
		noun, them = "integration test", "it"
	}
	return fmt.Sprintf("%s: %d %s skipped for want of %s:\n%s\trun %s with: %s\n",
		pkg, len(tests), noun, strings.Join(what, ", "), wrap(tests, 100), them, cmd)
}

// wrap lists names, comma-separated, on tab-indented lines of about width
// characters at most.
func wrap(names []string, width int) string {
	var b strings.Builder
	line := 0
	for i, n := range names {
		switch {
		case i == 0:
			b.WriteString("\t")
		case line+2+len(n) > width:
			b.WriteString(",\n\t")
			line = 0
		default:
			b.WriteString(", ")
			line += 2
		}
		b.WriteString(n)
		line += len(n)
	}
	b.WriteString("\n")
	return b.String()
}

// packageDir returns the directory of the package under test relative to
// its module's root, as go test takes it ("./distlock/redlock"): go test
// runs a test binary in its package's directory.
func packageDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for root := dir; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "."
		}
		root = parent
	}
}

// showGoTest writes s where a run of go test shows it when the package
// passes. go test shows a test binary's output (its stdout and stderr,
// both into one pipe) with -v or -json, or when the package failed; for a
// package that passed it prints only "ok" and drops the rest. So s goes
// straight to the stdout of go test itself: the process that started this
// binary, whose standard output Linux lets it open as /proc/<pid>/fd/1.
// There it shows in a terminal, a pipe or a CI log alike, before the
// package's "ok" line, among the lines of the packages that run beside it.
// Where there is no /proc, it goes to the terminal if there is one. A
// result that go test replays from its cache ("ok ... (cached)") shows no
// summary: nothing runs; -count=1 runs the tests again.
func showGoTest(s string) {
	if !underGoTest() || flagValue("test.v") != "false" {
		return // run by hand, or with -v or -json: the binary's output is shown
	}
	out, err := goTestStdout()
	if err != nil {
		if out, err = os.OpenFile("/dev/tty", os.O_WRONLY, 0); err != nil {
			return
		}
	}
	defer out.Close()
	out.WriteString(s)
}

// underGoTest reports whether go test started this binary: it always
// passes -test.paniconexit0, which a binary run by hand does not get.
func underGoTest() bool { return flagValue("test.paniconexit0") == "true" }

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// goTestStdout opens the standard output of the process that started
// this binary, unless it is this binary's own (go test in local directory
// mode hands its stdout down): then what the binary writes shows anyway.
func goTestStdout() (*os.File, error) {
	parent, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/1", os.Getppid()), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	ps, err1 := parent.Stat()
	own, err2 := os.Stdout.Stat()
	if err := errors.Join(err1, err2); err != nil || os.SameFile(ps, own) {
		parent.Close()
		return nil, errors.Join(err, errors.New("the parent's stdout is this binary's"))
	}
	return parent, nil
}
