package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A caller killed before Stop leaves its directories behind: nothing of
// its own runs after SIGKILL. So every temporary directory of the package
// names its owner, in a file of its own, and the next caller removes the
// directories whose owner is gone (RemoveOrphans). A directory without
// that file, or whose file does not read as one, is not known to be ours
// and is never removed; nor is one whose owner still runs.

// tempPrefix begins the name of every temporary directory made by TempDir.
const tempPrefix = "seatlock-"

// ownerFile is the file, in each directory made by TempDir, that names the
// process that made it: its pid and its start time (see processStart), so
// that another process that reuses the pid is not taken for it.
const ownerFile = ".seatlock-owner"

// TempDir makes a new directory in the temporary directory, named
// "seatlock-" + pattern as os.MkdirTemp names it, and writes in it who
// owns it: the calling process. It returns the directory's path.
func TempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", tempPrefix+pattern)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	pid := os.Getpid()
	owner := strconv.Itoa(pid) + " " + processStart(pid) + "\n"
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("cluster: %w", err)
	}
	return dir, nil
}

// RemoveOrphans removes every directory of the temporary directory that
// TempDir made for a process that has ended, and returns their paths.
// It removes nothing else: not a directory whose owner runs, nor one
// without an owner file of TempDir's (another program's, or one being
// made at this moment). Its error names the directories it could not
// remove.
func RemoveOrphans() ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var removed []string
	var errs []error
	for _, dir := range dirs {
		pid, start, ok := readOwner(dir)
		if !ok || ownerRuns(pid, start) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, dir)
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("cluster: remove a dead owner's directory: %w", errors.Join(errs...))
	}
	return removed, nil
}

// readOwner reads the owner file of dir; false when dir is not a
// directory or has none, or not one that TempDir wrote (symbolic links
// are not followed).
func readOwner(dir string) (pid int, start string, ok bool) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return 0, "", false
	}
	path := filepath.Join(dir, ownerFile)
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return 0, "", false
	}
	raw, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(raw), "\n") {
		return 0, "", false // a file being written has no newline yet
	}
	pidText, start, _ := strings.Cut(strings.TrimSuffix(string(raw), "\n"), " ")
	pid, err = strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return 0, "", false
	}
	return pid, start, true
}

// ownerRuns reports whether the process pid, started at start, runs. Where
// /proc tells processes' start times (Linux), a pid that another process
// has taken since, and a zombie, are owners that have ended; elsewhere a
// process with the pid is taken for the owner.
func ownerRuns(pid int, start string) bool {
	if st, ok := readProcStat(os.Getpid()); ok && st.start != "" {
		now, ok := readProcStat(pid)
		return ok && now.start == start && now.state != "Z"
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// processStart is when the process pid started, in the kernel's clock
// ticks since boot, as /proc tells it; empty where there is no /proc.
func processStart(pid int) string {
	st, _ := readProcStat(pid)
	return st.start
}

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	state string // "Z" for a zombie
	start string // field 22, starttime
}

// readProcStat reads /proc/PID/stat; false when there is no such file.
func readProcStat(pid int) (procStat, bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (name) state ppid ...": the name may hold spaces and
	// parentheses, so it ends at the last ')'; state is field 3.
	s := string(raw)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, false
	}
	fields := strings.Fields(s[end+1:])
	const state, starttime = 3, 22
	if len(fields) < starttime-2 {
		return procStat{}, false
	}
	return procStat{state: fields[state-3], start: fields[starttime-3]}, true
}
