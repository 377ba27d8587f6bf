package flock

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

// releaseWatch wakes a waiting Obtain when one of its lock files is
// released, through inotify: a Release opens the lock file for writing
// and closes it after unlocking (announce), which the kernel reports as
// IN_CLOSE_WRITE to every watch on the file. Attempts open lock files
// read-only, so a waiter that tries and fails makes no such event and
// cannot wake the other waiters into a busy loop.
//
// The inotify descriptor is non-blocking, so the runtime's poller waits
// on it: a read parks the goroutine, not a thread, and a read deadline
// ends it, which is how the caller's context and the backoff cut a wait
// short.
type releaseWatch struct {
	fd      int // the descriptor of f, kept: f.Fd() would make it blocking
	f       *os.File
	watches []uint32 // the watch descriptors of the waiter using it
	buf     []byte   // holds a burst of events; one read takes them all
}

// watchPool keeps a Locker's inotify instances while no waiter uses them.
// Closing an inotify descriptor waits for a kernel grace period, which
// takes milliseconds (docs/benchmarks.md), far more than a handoff;
// removing a watch does not. So a waiter gives its instance back with its
// watches removed, and the next waiter adds its own. The pool holds as
// many instances as the Locker had waiters at once; Locker.Close closes
// them (and, as a backstop, so does the Locker's garbage collection).
type watchPool struct {
	mu     sync.Mutex
	idle   []*releaseWatch // instances with no watch, their events drained
	closed bool            // after close, put closes what it is given
}

// get returns an instance watching the lock files at paths, or nil if
// inotify is not available (a limit on instances or watches, say): the
// waiter then polls.
func (p *watchPool) get(paths []string) *releaseWatch {
	p.mu.Lock()
	var w *releaseWatch
	if n := len(p.idle); n > 0 {
		w, p.idle = p.idle[n-1], p.idle[:n-1]
	}
	p.mu.Unlock()
	if w == nil {
		fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
		if err != nil {
			return nil
		}
		w = &releaseWatch{fd: fd, f: os.NewFile(uintptr(fd), "inotify"), buf: make([]byte, 4096)}
	}
	for _, path := range paths {
		wd, err := syscall.InotifyAddWatch(w.fd, path, syscall.IN_CLOSE_WRITE)
		if errors.Is(err, syscall.ENOENT) {
			// A key after the held one was never tried, so its file may
			// not exist yet: create it (read-only, so no event), then watch.
			if f, cerr := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644); cerr == nil {
				_ = f.Close()
				wd, err = syscall.InotifyAddWatch(w.fd, path, syscall.IN_CLOSE_WRITE)
			}
		}
		if err != nil {
			p.put(w)
			return nil
		}
		w.watches = append(w.watches, uint32(wd))
	}
	return w
}

// put removes w's watches, drops the events still queued for them, and
// keeps w for the next waiter. A nil w is ignored.
func (p *watchPool) put(w *releaseWatch) {
	if w == nil {
		return
	}
	for _, wd := range w.watches {
		_, _ = syscall.InotifyRmWatch(w.fd, wd)
	}
	w.watches = w.watches[:0]
	for { // non-blocking: EAGAIN once the queue is empty
		if n, err := syscall.Read(w.fd, w.buf); n <= 0 || err != nil {
			break
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = w.f.Close()
		return
	}
	p.idle = append(p.idle, w)
}

// close closes the idle instances, and those given back later. It may be
// called more than once.
func (p *watchPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		_ = w.f.Close()
	}
	p.idle = nil
}

// wait returns when a watched file was released, after d at the latest,
// or with ctx's error once ctx ends. A release that happened since the
// watch began returns at once: the kernel queued its event. A nil w just
// waits for d.
func (w *releaseWatch) wait(ctx context.Context, d time.Duration) error {
	if w == nil {
		return lockstate.Sleep(ctx, d)
	}
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return lockstate.Sleep(ctx, d)
	}
	// The context's end moves the deadline to now; AfterFunc runs the
	// function at once if ctx has ended already.
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cancelled)
		_ = w.f.SetReadDeadline(time.Now())
	})
	_, err := w.f.Read(w.buf)
	if !stop() {
		<-cancelled
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return lockstate.Sleep(ctx, d) // not a wait to trust: do not spin on it
	}
	return nil
}
