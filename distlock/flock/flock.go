package flock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

var _ distlock.Locker = (*Locker)(nil)

// Options tunes a Locker. The zero value works.
type Options struct {
	// RenewEvery is how often a lock's watchdog checks that its lock files
	// are still the files at their paths. There is no lease to renew: a
	// file lock cannot expire, it can only be lost when somebody removes
	// or replaces the file. Default 1s; a negative value disables the
	// watchdog.
	RenewEvery time.Duration

	// MinBackoff and MaxBackoff bound the jittered exponential backoff with
	// which a waiting Obtain tries the keys again when no release wakes it
	// (a holder that died, a system without inotify; see the package
	// doc). Defaults 1ms and 50ms.
	MinBackoff, MaxBackoff time.Duration
}

// Locker is a distlock.Locker on flock(2) locks, one lock file per key in a
// directory, for the processes of one host. A Locker is safe for
// concurrent use; it owns no goroutine beyond those of held locks. Close
// closes the descriptors with which its waiters watch for releases.
type Locker struct {
	dir     string
	opts    Options // with defaults applied
	watches *watchPool
}

// New returns a Locker on the lock files in dir, which it creates (with its
// parents) if needed. It returns an error if dir cannot be created or is
// not a directory.
func New(dir string, opts Options) (*Locker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("flock: %w", err)
	}
	if opts.RenewEvery == 0 {
		opts.RenewEvery = time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 50 * time.Millisecond
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	l := &Locker{dir: dir, opts: opts, watches: &watchPool{}}
	runtime.AddCleanup(l, (*watchPool).close, l.watches)
	return l, nil
}

// Close closes the inotify descriptors the Locker keeps for its waiters;
// a waiter still waiting closes its own when it is done. Locks held stay
// held until released. It always returns nil, and may be called more than
// once; a Locker that is never closed has them closed when it is garbage
// collected.
func (l *Locker) Close() error {
	l.watches.close()
	return nil
}

// Path returns the lock file of key: the hex SHA-256 of the key, so that
// any key makes a safe file name of fixed length, with ".lock" after it.
// The fencing counter of key is in the file of the same name ending in
// ".fence", whose second line is the key itself, for people who read the
// directory. Never remove either while a process may use them.
func (l *Locker) Path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(l.dir, hex.EncodeToString(sum[:])+".lock")
}

func (l *Locker) fencePath(key string) string {
	return strings.TrimSuffix(l.Path(key), ".lock") + ".fence"
}

// Obtain takes every key, all or nothing, waiting until the keys are free or
// ctx ends. Duplicate keys are taken once. Each attempt tries every key
// without blocking and gives back those it got if one is held, then waits
// for a release of one of the keys (see the package doc, "Waiting") or a
// jittered backoff, whichever comes first: a waiter never holds a key, so
// waiters cannot deadlock.
//
// When ctx ends first, the error is errors.Join(distlock.ErrNotAcquired,
// ctx.Err()). An error from the file system (the directory is not
// writable, say) is returned wrapped, and is not ErrNotAcquired.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, err := distinctSorted(keys)
	if err != nil {
		return nil, err
	}
	var watch *releaseWatch // set up after the first attempt fails
	defer func() { l.watches.put(watch) }()
	for attempt := 0; ; attempt++ {
		lk, err := l.try(ctx, ks)
		if lk != nil || (err != nil && !errors.Is(err, distlock.ErrNotAcquired)) {
			return lk, err
		}
		if attempt == 0 {
			// Watch first, then try again at once: a release between
			// the attempt and the watch would otherwise go unseen.
			paths := make([]string, len(ks))
			for i, k := range ks {
				paths[i] = l.Path(k)
			}
			if watch = l.watches.get(paths); watch != nil {
				continue
			}
		}
		if err := watch.wait(ctx, l.backoff(attempt)); err != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, err)
		}
	}
}

// TryObtain takes every key, all or nothing, without waiting. It returns an
// error wrapping distlock.ErrNotAcquired at once when a key is held, or an
// error from the file system, wrapped.
func (l *Locker) TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, err := distinctSorted(keys)
	if err != nil {
		return nil, err
	}
	lk, err := l.try(ctx, ks)
	if err != nil {
		return nil, err
	}
	return lk, nil
}

// try makes one attempt on ks, in order. It returns the lock, or an error
// wrapping ErrNotAcquired naming a held key, or a file system error.
func (l *Locker) try(ctx context.Context, ks []string) (*lock, error) {
	files := make([]*os.File, 0, len(ks))
	giveBack := func() {
		for _, f := range files {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			_ = f.Close()
		}
	}
	for _, k := range ks {
		f, err := lockFile(l.Path(k))
		if err != nil {
			giveBack()
			if errors.Is(err, errHeld) {
				return nil, fmt.Errorf("%w: %q is held", distlock.ErrNotAcquired, k)
			}
			return nil, fmt.Errorf("flock: lock %q: %w", k, err)
		}
		files = append(files, f)
	}
	fences := make([]int64, len(ks))
	for i, k := range ks {
		var err error
		if fences[i], err = l.nextFence(ctx, k); err != nil {
			giveBack()
			if ctx.Err() != nil {
				return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
			}
			return nil, fmt.Errorf("flock: fencing token of %q: %w", k, err)
		}
	}
	return newLock(l, ks, files, fences), nil
}

// errHeld is what lockFile returns when another open file holds the lock.
var errHeld = errors.New("flock: held")

// lockFile opens path, creating it if needed, and takes an exclusive flock
// on it without waiting. The lock belongs to this open file description:
// another open of the same path, in this process or another, is refused,
// and closing the file (or the process's death) releases it.
//
// A file removed or replaced between our open and our flock would give us
// a lock on a file nobody else will ever open, so the lock is only taken
// if the path still names the locked file; if not, lockFile tries again
// with the new file.
func lockFile(path string) (*os.File, error) {
	for {
		// Read-only: an attempt that fails closes the file without the
		// IN_CLOSE_WRITE that wakes waiters (see announce).
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close()
			return nil, err
		}
		same, err := isFileAt(f, path)
		if same {
			return f, nil
		}
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
}

// flock calls flock(2), retrying when a signal interrupts it, and turns
// EWOULDBLOCK into errHeld.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errHeld
		default:
			return err
		}
	}
}

// isFileAt reports whether path names the file that f has open: a file
// that was removed or replaced has lost its lock for everybody who opens
// the path.
func isFileAt(f *os.File, path string) (bool, error) {
	open, err := f.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return os.SameFile(open, named), nil
}

// nextFence increments the fencing counter of key and returns its new
// value. It runs while key's lock is held, so the values of a key strictly
// increase. The counter lives in a file of its own, so that it survives the
// removal of the lock file; that file has its own short flock as well,
// because two holders can only exist after such a removal, which is
// exactly when fencing must keep them apart. The write is fsynced before
// the token is handed out: a token must never be issued twice, not even
// across a crash.
func (l *Locker) nextFence(ctx context.Context, key string) (int64, error) {
	f, err := os.OpenFile(l.fencePath(key), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close() // also releases the flock
	for attempt := 0; ; attempt++ {
		err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, errHeld) {
			return 0, err
		}
		// Held for the few microseconds of an increment.
		if err := lockstate.Sleep(ctx, l.backoff(attempt)); err != nil {
			return 0, err
		}
	}
	buf := make([]byte, 64)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	var last int64
	if first, _, _ := strings.Cut(string(buf[:n]), "\n"); first != "" {
		if last, err = strconv.ParseInt(first, 10, 64); err != nil {
			return 0, fmt.Errorf("corrupt counter in %s: %w", f.Name(), err)
		}
	}
	next := last + 1
	content := strconv.FormatInt(next, 10) + "\n" + key + "\n"
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		return 0, err
	}
	if err := f.Truncate(int64(len(content))); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	return next, nil
}

// backoff returns how long a waiter sleeps before its next attempt:
// jittered exponential between MinBackoff and MaxBackoff.
func (l *Locker) backoff(attempt int) time.Duration {
	return lockstate.Backoff(attempt, l.opts.MinBackoff, l.opts.MaxBackoff, -1)
}

// announce tells the waiters on the lock file at path that it was
// released: it opens the file for writing and closes it, which inotify
// reports to their watches as IN_CLOSE_WRITE (see releaseWatch). It runs
// after the unlock, so a waiter woken by it finds the key free. A holder
// that dies announces nothing: its waiters notice within their backoff.
func announce(path string) {
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		_ = f.Close()
	}
}

// distinctSorted returns keys without duplicates, sorted: the order in
// which every caller takes them.
func distinctSorted(keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, errors.New("flock: Obtain needs at least one key")
	}
	ks := slices.Clone(keys)
	slices.Sort(ks)
	return slices.Compact(ks), nil
}
