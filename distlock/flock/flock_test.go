package flock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/flock"
	"github.com/seatlock/seatlock/internal/wait"
)

// twoLockers returns two Lockers on one directory of their own, as two
// processes would open it.
func twoLockers(t *testing.T) (*flock.Locker, *flock.Locker) {
	t.Helper()
	dir := t.TempDir()
	return newLocker(t, dir, flock.Options{}), newLocker(t, dir, flock.Options{})
}

func newLocker(t testing.TB, dir string, opts flock.Options) *flock.Locker {
	t.Helper()
	l, err := flock.New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// vanishing is a Locker whose locks vanish a while after they are taken,
// as if their process died.
type vanishing struct {
	t     *testing.T
	l     *flock.Locker
	after time.Duration
}

func (v vanishing) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	lock, err := v.l.Obtain(ctx, keys...)
	if err == nil {
		v.t.Cleanup(flock.VanishAfterForTest(lock, v.after))
	}
	return lock, err
}

func TestConformance(t *testing.T) {
	const ttl = time.Second
	dir := t.TempDir() // one directory: every subtest's keys are fresh
	opts := flock.Options{RenewEvery: ttl / 4}
	expirer := newLocker(t, dir, opts)
	distlocktest.Run(t, func(t *testing.T) distlock.Locker {
		return newLocker(t, dir, opts)
	}, distlocktest.Options{
		TTL: ttl,
		// A file lock has no lease: it is freed when its holder's process
		// dies (TestKilledHolderFreesItsKeys kills a real one). This
		// holder's "process" dies a TTL after taking each lock.
		NewNonRenewing: func(t *testing.T) distlock.Locker {
			return vanishing{t: t, l: newLocker(t, dir, opts), after: ttl}
		},
		// The one way to take a file lock from a live holder: remove its
		// file, so that the next process locks a new one.
		Expire: func(t *testing.T, key string) {
			if err := os.Remove(expirer.Path(key)); err != nil {
				t.Fatal(err)
			}
		},
		Fencing: true,
	})
}

// The child process side of TestKilledHolderFreesItsKeys: it runs only when
// the parent starts the test binary with FLOCK_CHILD_DIR set.
func TestChildHolder(t *testing.T) {
	dir, key := os.Getenv("FLOCK_CHILD_DIR"), os.Getenv("FLOCK_CHILD_KEY")
	if dir == "" {
		t.Skip("runs only as the child process of TestKilledHolderFreesItsKeys")
	}
	lock, err := newLocker(t, dir, flock.Options{}).Obtain(context.Background(), key)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("locked", lock.Token(key))
	time.Sleep(time.Minute) // a holder that stays, until the parent kills it
	os.Exit(1)
}

func TestKilledHolderFreesItsKeys(t *testing.T) {
	dir, key := t.TempDir(), "{screening-42}:C7"
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildHolder$", "-test.v")
	cmd.Env = append(os.Environ(), "FLOCK_CHILD_DIR="+dir, "FLOCK_CHILD_KEY="+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader goroutine ends when the child's stdout does, at its
	// death; kill waits for it before cmd.Wait, which closes the pipe.
	ready := make(chan int64, 1)
	var reader sync.WaitGroup
	reader.Go(func() {
		defer close(ready)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if tok, ok := strings.CutPrefix(sc.Text(), "locked "); ok {
				n, _ := strconv.ParseInt(tok, 10, 64)
				ready <- n
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
	})
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			_ = cmd.Process.Kill() // SIGKILL: no defer, no cleanup runs in the child
			reader.Wait()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)

	var childToken int64
	select {
	case tok, ok := <-ready:
		if !ok {
			t.Fatal("child ended without taking the lock")
		}
		childToken = tok
	case <-time.After(30 * time.Second):
		t.Fatal("child did not take the lock within 30s")
	}

	l := newLocker(t, dir, flock.Options{})
	if _, err := l.TryObtain(t.Context(), key); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain while the child holds the key = %v, want ErrNotAcquired", err)
	}

	killed := time.Now()
	kill()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	lock, err := l.Obtain(ctx, key)
	if err != nil {
		t.Fatalf("Obtain after the holder was killed: %v", err)
	}
	defer lock.Release(t.Context())
	t.Logf("key taken %v after SIGKILL of the holder", time.Since(killed))
	if tok := lock.Token(key); tok <= childToken {
		t.Fatalf("token %d after the child's %d, want it higher", tok, childToken)
	}
}

func TestTwoLockersInOneProcessExclude(t *testing.T) {
	a, b := twoLockers(t)
	held, err := a.TryObtain(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	// Another open file description, even in this process, is refused;
	// so is a second lock from the same Locker.
	for name, l := range map[string]*flock.Locker{"other locker": b, "same locker": a} {
		if _, err := l.TryObtain(t.Context(), "k"); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("%s: TryObtain of a held key = %v, want ErrNotAcquired", name, err)
		}
	}
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	lock, err := b.TryObtain(t.Context(), "k")
	if err != nil {
		t.Fatalf("TryObtain after Release: %v", err)
	}
	_ = lock.Release(t.Context())
}

func TestTryObtainAllOrNothing(t *testing.T) {
	a, b := twoLockers(t)
	held, err := a.TryObtain(t.Context(), "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryObtain(t.Context(), "a", "b", "c"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain of a held set = %v, want ErrNotAcquired", err)
	}
	for _, k := range []string{"a", "c"} {
		lock, err := a.TryObtain(t.Context(), k)
		if err != nil {
			t.Fatalf("TryObtain(%q) after a refused set: %v", k, err)
		}
		_ = lock.Release(t.Context())
	}
	_ = held.Release(t.Context())
}

func TestKeysMakeSafeFileNames(t *testing.T) {
	dir := t.TempDir()
	l := newLocker(t, dir, flock.Options{})
	for _, key := range []string{"../../etc/passwd", "", "{a}:b/c", strings.Repeat("x", 1000), "é\x00"} {
		lock, err := l.TryObtain(t.Context(), key)
		if err != nil {
			t.Fatalf("TryObtain(%q): %v", key, err)
		}
		if p := l.Path(key); !strings.HasPrefix(p, dir+string(os.PathSeparator)) || strings.Count(p[len(dir)+1:], string(os.PathSeparator)) != 0 {
			t.Fatalf("Path(%q) = %q, not a file directly in %s", key, p, dir)
		}
		if err := lock.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewRefusesAFile(t *testing.T) {
	f := t.TempDir() + "/file"
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := flock.New(f, flock.Options{}); err == nil {
		t.Fatal("New on a regular file succeeded")
	}
}

// TestReleaseWakesWaiter checks that a Release wakes a waiting Obtain (on
// Linux, through inotify) instead of leaving it to its backoff: with a
// backoff of a minute, a waiter that only polled would still be asleep
// when its context ends.
func TestReleaseWakesWaiter(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters are woken through inotify, on Linux only; elsewhere they poll")
	}
	for _, tc := range []struct {
		name         string
		held, wanted []string
	}{
		{"one key", []string{"A1"}, []string{"A1"}},
		{"one of two keys", []string{"B1", "B2"}, []string{"B2", "B3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := flock.Options{MinBackoff: time.Minute, MaxBackoff: time.Minute}
			distlocktest.ReleaseWakesWaiter(t, newLocker(t, dir, opts), newLocker(t, dir, opts), tc.held, tc.wanted)
		})
	}
}

// inotifyDescriptors counts the inotify instances this process has open.
func inotifyDescriptors(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// A waiter's inotify instance is kept for the next waiter, and Close is
// what closes it.
func TestCloseClosesWatches(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("waiters watch through inotify on Linux only")
	}
	before := inotifyDescriptors(t)
	holder, waiter := twoLockers(t)
	held, err := holder.Obtain(t.Context(), "A1")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		lock, err := waiter.Obtain(t.Context(), "A1")
		if err == nil {
			err = lock.Release(context.Background())
		}
		got <- err
	}()
	wait.For(t, 10*time.Second, "the waiter watches A1 through an inotify instance of its own", func() bool {
		return inotifyDescriptors(t) == before+1
	})
	if err := held.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := wait.Recv(t, got, 10*time.Second, "the waiter's Obtain after the release"); err != nil {
		t.Fatal(err)
	}
	if n := inotifyDescriptors(t); n != before+1 {
		t.Fatalf("%d inotify instances open after one wait, want %d (one kept for the next waiter)", n, before+1)
	}
	if err := waiter.Close(); err != nil {
		t.Fatal(err)
	}
	if n := inotifyDescriptors(t); n != before {
		t.Errorf("%d inotify instances open after Close, want %d", n, before)
	}
}
