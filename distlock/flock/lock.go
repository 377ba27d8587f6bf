package flock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

// lock is a set of keys held by open lock files of this process.
//
// Its watchdog is one goroutine, started by newLock and ended by Release
// (which closes stop and waits for done), that checks every RenewEvery that
// each path still names the file it has locked.
type lock struct {
	locker *Locker
	keys   []string      // sorted, distinct; State.Keys too
	stop   chan struct{} // closed by Release: the watchdog returns
	done   chan struct{} // closed by the watchdog when it returns

	// mu protects files and every use of them: a check (a couple of stat
	// calls, never a wait) or the release. State (the fencing tokens, held,
	// lost or released) changes only under mu too, in loseLocked or
	// Release, so that a check and the loss it finds are one step.
	mu    sync.Mutex
	files []*os.File // files[i] holds the flock of keys[i]; closed by Release
	lockstate.State
}

var _ distlock.Lock = (*lock)(nil)

func newLock(l *Locker, keys []string, files []*os.File, fences []int64) *lock {
	lk := &lock{
		locker: l,
		keys:   keys,
		State:  lockstate.State{Keys: keys, Fences: fences},
		files:  files,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go lk.watch()
	return lk
}

// loseLocked declares the lock lost with cause, unless it was lost or
// released already. lk.mu must be held.
func (lk *lock) loseLocked(cause error) { lk.Lose(cause) }

// Refresh checks that every lock file is still the file at its path; there
// is no lease to extend. It returns distlock.ErrNotHeld, and declares the
// lock lost, if a file was removed or replaced (someone else may lock the
// new file), or ErrNotHeld if the lock was lost or released before.
func (lk *lock) Refresh(context.Context) error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.Err() != nil {
		return distlock.ErrNotHeld
	}
	if err := lk.checkLocked(); err != nil {
		return fmt.Errorf("%w: %w", distlock.ErrNotHeld, err)
	}
	return nil
}

// checkLocked declares the lock lost, and returns the cause, if a lock file
// is no longer the file at its path. lk.mu must be held.
func (lk *lock) checkLocked() error {
	cause := lk.replacedLocked()
	if cause != nil {
		lk.loseLocked(cause)
	}
	return cause
}

// replacedLocked returns an error wrapping ErrLost if a lock file is no
// longer the file at its path. lk.mu must be held.
func (lk *lock) replacedLocked() error {
	for i, f := range lk.files {
		same, err := isFileAt(f, f.Name())
		if same {
			continue
		}
		cause := fmt.Errorf("%w: the lock file of %q was replaced", distlock.ErrLost, lk.keys[i])
		if err != nil {
			cause = fmt.Errorf("%w: the lock file of %q: %w", distlock.ErrLost, lk.keys[i], err)
		}
		return cause
	}
	return nil
}

// Release unlocks and closes every lock file and stops the watchdog. It
// returns distlock.ErrNotHeld if the lock was lost or released before, or
// if a lock file was found removed or replaced; the files are closed all
// the same.
func (lk *lock) Release(context.Context) error {
	lk.mu.Lock()
	if lk.Released() {
		lk.mu.Unlock()
		return fmt.Errorf("%w: released already", distlock.ErrNotHeld)
	}
	lostErr := lk.Err()
	if lostErr == nil {
		lostErr = lk.replacedLocked() // reported, but Release does not close Lost
	}
	lk.MarkReleased(distlock.ErrNotHeld)
	files := lk.files
	lk.files = nil
	lk.mu.Unlock()
	close(lk.stop)
	<-lk.done

	for _, f := range files {
		// Close alone would release the flock; the explicit unlock says
		// so, and frees the key even if a duplicate descriptor of this
		// open file lived on in a child process.
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
		announce(f.Name())
	}
	if lostErr != nil {
		return fmt.Errorf("%w: %v", distlock.ErrNotHeld, lostErr)
	}
	return nil
}

// watch is the watchdog goroutine; see lock.
func (lk *lock) watch() {
	defer close(lk.done)
	every := lk.locker.opts.RenewEvery
	if every < 0 {
		<-lk.stop
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-lk.stop:
			return
		case <-t.C:
			if errors.Is(lk.Refresh(context.Background()), distlock.ErrNotHeld) {
				return // lost
			}
		}
	}
}
