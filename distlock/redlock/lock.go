package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/batch"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

// lock is a lock held on a quorum of the nodes.
//
// Its watchdog is two timers: renewTimer extends the lease on every node
// every RenewEvery, and expiryTimer declares the lock lost when the
// validity runs out without a renewal that reached a quorum. Their
// callbacks run in goroutines the runtime starts when a timer fires; while
// no timer fires, a held lock costs no goroutine. Release stops both timers
// and waits for every callback that is running or has fired and not yet
// run.
type lock struct {
	l     *Locker
	ks    *keySet
	token string          // owner token: the value of every lock key on every node
	ctx   context.Context // for renewals: Obtain's values, not its cancellation

	// State holds ks.keys with their fencing tokens, which never change,
	// and whether the lock is held, lost or released.
	lockstate.State

	// mu protects the fields below. State changes only under mu too, in
	// loseLocked or Release, so that a timer sees it as it arms. A timer is armed (created or Reset)
	// only under mu and only while !released, and its armed flag is
	// cleared by its callback under mu: so when Release holds mu, a timer
	// whose flag is set and whose Stop fails has fired, and its callback
	// has yet to take mu; Release counts it in callbacks.
	mu          sync.Mutex
	deadline    time.Time // until when the lock is surely valid on a quorum, less StopMargin
	renewTimer  *time.Timer
	renewArmed  bool
	expiryTimer *time.Timer
	expiryArmed bool
	lastErr     error // the last failed renewal's error, for the loss report

	// callbacks counts the renew callbacks at work, and the callbacks that
	// Release found fired but not yet started.
	callbacks sync.WaitGroup
}

var _ distlock.Lock = (*lock)(nil)

// newLock returns a lock valid until deadline, with its watchdog armed.
func newLock(ctx context.Context, l *Locker, ks *keySet, token string, fences []int64, deadline time.Time) *lock {
	lk := &lock{
		l:        l,
		ks:       ks,
		token:    token,
		State:    lockstate.State{Keys: ks.keys, Fences: fences},
		ctx:      context.WithoutCancel(ctx),
		deadline: deadline,
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if every := l.opts.RenewEvery; every > 0 {
		lk.renewTimer = time.AfterFunc(every, lk.renew)
		lk.renewArmed = true
	}
	lk.expiryTimer = time.AfterFunc(time.Until(deadline), lk.checkExpiry)
	lk.expiryArmed = true
	return lk
}

// loseLocked declares the lock lost with cause, unless it was lost or
// released already. lk.mu must be held.
func (lk *lock) loseLocked(cause error) { lk.Lose(cause) }

// Refresh extends the lease of every key on every node that still holds
// it, all at once. It succeeds when a quorum of nodes extended it within
// the new validity. It returns distlock.ErrNotHeld, and declares the lock
// lost, when so many nodes refused (the key gone or held by another owner)
// that a quorum is out of reach; ErrNotHeld if the lock was lost or
// released before; and otherwise an error wrapping ErrUnavailable (too many
// nodes failed to answer, or answered too late): that is no loss while the
// validity lasts, and the watchdog tries again.
func (lk *lock) Refresh(ctx context.Context) error {
	if lk.Err() != nil {
		return distlock.ErrNotHeld
	}
	l := lk.l
	start := time.Now()
	deadline := l.leaseEnd(start)
	// A renewal goes out alone, not queued behind the batches of other
	// callers: on a loaded node a queue adds up to a round trip, and the
	// renewal is what keeps the lock valid.
	replies := fanOut(ctx, l, func(ctx context.Context, _ int, node *batch.Batcher) (bool, error) {
		return node.RunAlone(ctx, refreshScript, lk.ks.lockKeys, lk.token, l.leaseMillis).Bool()
	})
	extended, refused := 0, 0
	var failed []error
	for i, r := range replies {
		switch {
		case r.err != nil:
			failed = append(failed, fmt.Errorf("node %d: %w", i, r.err))
		case r.val:
			extended++
		default:
			refused++
		}
	}

	lk.mu.Lock()
	defer lk.mu.Unlock()
	switch {
	case extended >= l.quorum && time.Now().Before(deadline):
		if deadline.After(lk.deadline) {
			lk.deadline = deadline
		}
		return nil
	case refused > len(l.nodes)-l.quorum:
		lk.loseLocked(fmt.Errorf("%w: %d of %d nodes no longer hold %q for this owner",
			distlock.ErrLost, refused, len(l.nodes), lk.ks.keys))
		return distlock.ErrNotHeld
	}
	return fmt.Errorf("%w: refresh %q: %d of %d nodes extended the lease in time, %d needed: %w",
		ErrUnavailable, lk.ks.keys, extended, len(l.nodes), l.quorum, errors.Join(failed...))
}

// Release stops the watchdog, waits for it, then deletes the keys on every
// node that still holds them for this owner, all at once; a node that had
// lost them is left alone. It returns nil when a quorum of nodes still
// held every key; distlock.ErrNotHeld when fewer than a quorum did and the
// other nodes answered (the lease had run out on them: another holder may
// have come in between), or when it was called before; and an error
// wrapping ErrUnavailable when so many nodes failed to answer that it
// cannot tell. Keys on nodes that did not answer are freed when their lease
// runs out.
func (lk *lock) Release(ctx context.Context) error {
	lk.mu.Lock()
	if _, first := lk.MarkReleased(distlock.ErrNotHeld); !first {
		lk.mu.Unlock()
		return distlock.ErrNotHeld
	}
	if lk.renewArmed && !lk.renewTimer.Stop() {
		lk.callbacks.Add(1) // fired: its callback will see released and call Done
	}
	if lk.expiryArmed && !lk.expiryTimer.Stop() {
		lk.callbacks.Add(1)
	}
	lk.renewArmed, lk.expiryArmed = false, false
	lk.mu.Unlock()
	lk.callbacks.Wait()

	l := lk.l
	held, failed := l.releaseAll(ctx, lk.ks, lk.token)
	switch {
	case held >= l.quorum:
		return nil
	case held+len(failed) >= l.quorum:
		return fmt.Errorf("%w: release %q: %d of %d nodes still held it, %d failed: %w",
			ErrUnavailable, lk.ks.keys, held, len(l.nodes), len(failed), errors.Join(failed...))
	}
	return fmt.Errorf("%w: only %d of %d nodes still held %q", distlock.ErrNotHeld, held, len(l.nodes), lk.ks.keys)
}

// renew is renewTimer's callback: it extends the lease, and arms the timer
// again, sooner after a renewal that did not reach a quorum, which is no
// loss by itself while the validity lasts. A renewal that finds a quorum
// out of reach declares the loss (in Refresh); checkExpiry declares it when
// the validity runs out first.
func (lk *lock) renew() {
	lk.mu.Lock()
	lk.renewArmed = false
	if lk.Released() {
		lk.mu.Unlock()
		lk.callbacks.Done() // Release counted this fired callback
		return
	}
	lk.callbacks.Add(1)
	lk.mu.Unlock()
	defer lk.callbacks.Done()

	err := lk.Refresh(lk.ctx)

	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.Err() != nil || errors.Is(err, distlock.ErrNotHeld) { // released or lost
		return
	}
	every := lk.l.opts.RenewEvery
	if err != nil {
		lk.lastErr = err
		every = max(every/4, time.Millisecond)
	} else {
		lk.lastErr = nil
	}
	lk.renewTimer.Reset(every)
	lk.renewArmed = true
}

// checkExpiry is expiryTimer's callback: it declares the lock lost once
// the validity has run out, or arms the timer for the deadline that a
// renewal moved.
func (lk *lock) checkExpiry() {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	lk.expiryArmed = false
	if lk.Released() {
		lk.callbacks.Done() // Release counted this fired callback
		return
	}
	if lk.Err() != nil {
		return // lost already
	}
	if left := time.Until(lk.deadline); left > 0 {
		lk.expiryTimer.Reset(left)
		lk.expiryArmed = true
		return
	}
	cause := fmt.Errorf("%w: the validity of %q ran out without a renewal on a quorum", distlock.ErrLost, lk.ks.keys)
	if lk.lastErr != nil {
		cause = fmt.Errorf("%w: the validity of %q ran out; last renewal: %w", distlock.ErrLost, lk.ks.keys, lk.lastErr)
	}
	lk.loseLocked(cause)
}
