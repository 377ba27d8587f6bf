package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tempDirHelperEnv, when set, makes TestTempDirHelperProcess make a
// directory with TempDir, print its path and exit: a process that owned
// a directory and has ended, as a killed nemesis has.
const tempDirHelperEnv = "SEATLOCK_TEMPDIR_HELPER"

// TestTempDirHelperProcess is not a test: it is the owner that ends, run
// by TestRemoveOrphans in a process of its own.
func TestTempDirHelperProcess(t *testing.T) {
	if os.Getenv(tempDirHelperEnv) == "" {
		t.Skip("runs only as the helper process of TestRemoveOrphans")
	}
	dir, err := TempDir("ended-")
	if err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString(dir + "\n")
	os.Exit(0)
}

func TestRemoveOrphans(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())

	// Made by a process that has ended: removed.
	helper := exec.Command(os.Args[0], "-test.run=^TestTempDirHelperProcess$")
	helper.Env = append(os.Environ(), tempDirHelperEnv+"=1")
	out, err := helper.Output()
	if err != nil {
		t.Fatalf("helper process: %v", err)
	}
	ended := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(ended, ownerFile)); err != nil {
		t.Fatalf("the helper made no directory with an owner file: %v (it printed %q)", err, out)
	}

	// Made by this process, which runs: kept.
	mine, err := TempDir("running-")
	if err != nil {
		t.Fatal(err)
	}
	// This process's pid, written down by another process that had it
	// before (another start time): that owner has ended; removed.
	reused := mkdir(t, "seatlock-reused-pid")
	writeOwner(t, reused, strconv.Itoa(os.Getpid())+" 1\n")
	// Not TempDir's: the API's lock directory, a directory whose owner
	// file is being written, one whose owner file is not one: kept.
	locks := mkdir(t, "seatlock-locks")
	partial := mkdir(t, "seatlock-partial")
	writeOwner(t, partial, "4194")
	garbage := mkdir(t, "seatlock-garbage")
	writeOwner(t, garbage, "not a pid\n")
	other := mkdir(t, "other-"+filepath.Base(ended)) // another name: kept
	// A symbolic link with our name to a directory of a dead owner: kept,
	// and the directory too.
	target := mkdir(t, "target")
	writeOwner(t, target, strconv.Itoa(os.Getpid())+" 1\n")
	link := filepath.Join(os.TempDir(), "seatlock-link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	removed, err := RemoveOrphans()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{ended, reused}; !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	for _, dir := range []string{mine, locks, partial, garbage, other, target, link} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v; it should have been kept", filepath.Base(dir), err)
		}
	}
	for _, dir := range []string{ended, reused} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v); its owner has ended", filepath.Base(dir), err)
		}
	}
}

// mkdir makes the directory name in the temporary directory.
func mkdir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeOwner writes text as dir's owner file.
func writeOwner(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
