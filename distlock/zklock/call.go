package zklock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/z-division/go-zookeeper/zk"
)

// ErrNoAnswer is wrapped by the error of a ZooKeeper call that the Locker
// stopped waiting for: its ctx ended, Options.CallTimeout passed, or the
// Locker was closed. The server may still apply the call later; a node it
// creates or keeps that way is left to the Locker's sweeper.
var ErrNoAnswer = errors.New("zklock: no answer from ZooKeeper")

// defaultCallTimeout is the shortest default of Options.CallTimeout.
const defaultCallTimeout = 10 * time.Second

// closeWait bounds how long Close waits for the client library to close
// the connection and to answer the calls still in flight.
const closeWait = 5 * time.Second

// call runs f, one ZooKeeper call, and waits for its answer until ctx
// ends, Options.CallTimeout passes, or the Locker is closed, whichever
// comes first; it then returns an error wrapping ErrNoAnswer (and
// ctx.Err() when ctx ended).
//
// The client library's calls take no context and are not bounded: a call
// made while the client is stuck in its handshake with a server that
// accepted the connection but does not answer waits for ten read timeouts
// (almost seven session timeouts), and one that the library leaves queued
// when it closes waits for ever. So f runs in a goroutine of its own,
// which ends when the library answers. If nobody waits for the answer any
// more by then, abandoned (when not nil) gets it, to undo what the call
// did: a node created for an Obtain that gave up must not block its key.
//
// Once the Locker is closed, call makes no call and fails at once.
func call[T any](ctx context.Context, l *Locker, f func() (T, error), abandoned func(T, error)) (T, error) {
	var (
		mu     sync.Mutex // protects the three below
		done   bool       // f returned, and v and err are its answer
		v      T
		err    error
		gaveUp bool // the caller returned without the answer
	)
	answered := make(chan struct{})
	// Close waits for l.calls after it set l.closed: no Add may come
	// after that Wait began.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return v, fmt.Errorf("%w: %w", ErrNoAnswer, zk.ErrClosing)
	}
	l.calls.Add(1)
	l.mu.Unlock()
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	go func() {
		defer l.calls.Done()
		rv, rerr := f()
		mu.Lock()
		if gaveUp {
			mu.Unlock()
			if abandoned != nil {
				abandoned(rv, rerr)
			}
			return
		}
		done, v, err = true, rv, rerr
		mu.Unlock()
		close(answered)
	}()

	timer := time.NewTimer(l.opts.CallTimeout)
	defer timer.Stop()
	var cause error
	select {
	case <-answered:
		return v, err
	case <-ctx.Done():
		cause = fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
	case <-timer.C:
		cause = fmt.Errorf("%w within %v", ErrNoAnswer, l.opts.CallTimeout)
	case <-l.done:
		cause = fmt.Errorf("%w: %w", ErrNoAnswer, zk.ErrClosing)
	}
	mu.Lock()
	defer mu.Unlock()
	if done { // the answer came in the meantime: it is the result
		return v, err
	}
	gaveUp = true
	var zero T
	return zero, cause
}

// call0 is call for a ZooKeeper call that returns only an error.
func call0(ctx context.Context, l *Locker, f func() error) error {
	_, err := call(ctx, l, func() (struct{}, error) { return struct{}{}, f() }, nil)
	return err
}

// waitFor waits for wg until timeout passes, and reports whether wg was
// done by then. When it was not, the goroutine that waits for wg is left
// behind, and ends with the last call it waits for.
func waitFor(wg *sync.WaitGroup, timeout time.Duration) bool {
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-finished:
		return true
	case <-timer.C:
		return false
	}
}
