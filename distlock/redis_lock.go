package distlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// redisLock is a lock held on Redis keys.
//
// Its watchdog is two timers: renewTimer extends the lease every
// RenewEvery, and expiryTimer declares the lock lost when the lease's
// deadline passes without a successful renewal. Their callbacks run in
// goroutines the runtime starts when a timer fires; while no timer fires, a
// held lock costs no goroutine. Release stops both timers and waits for
// every callback that is running or has fired and not yet run.
type redisLock struct {
	r      *Redis
	ks     *keySet
	token  string          // owner token: the value of every lock key
	fences []int64         // fences[i] is the fencing token of ks.keys[i]; never changes
	ctx    context.Context // for renewals: Obtain's values, not its cancellation
	lost   chan struct{}   // closed once, by loseLocked

	// mu protects the fields below. err changes only under mu, in
	// loseLocked or Release, which is what makes "lost is closed exactly
	// when err wraps ErrLost" hold. A timer is armed (created or Reset)
	// only under mu and only while !released, and its armed flag is
	// cleared by its callback under mu: so when Release holds mu, a timer
	// whose flag is set and whose Stop fails has fired, and its callback
	// has yet to take mu; Release counts it in callbacks.
	mu          sync.Mutex
	deadline    time.Time   // until when the lease is surely valid on the server
	err         error       // nil while held; wraps ErrLost once lost; ErrNotHeld once released
	released    bool        // Release was called: no callback may start work
	renewTimer  *time.Timer // nil when the watchdog is disabled
	renewArmed  bool
	expiryTimer *time.Timer
	expiryArmed bool
	lastErr     error // the last failed renewal's error, for the loss report

	// callbacks counts the renew callbacks at work, and the callbacks that
	// Release found fired but not yet started.
	callbacks sync.WaitGroup
}

var _ Lock = (*redisLock)(nil)

// newRedisLock returns the lock acquired by a script sent at sent, with its
// watchdog armed.
func newRedisLock(ctx context.Context, r *Redis, ks *keySet, token string, fences []int64, sent time.Time) *redisLock {
	l := &redisLock{
		r:        r,
		ks:       ks,
		token:    token,
		fences:   fences,
		ctx:      context.WithoutCancel(ctx),
		lost:     make(chan struct{}),
		deadline: r.leaseEnd(sent),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if every := r.opts.RenewEvery; every > 0 {
		l.renewTimer = time.AfterFunc(every, l.renew)
		l.renewArmed = true
	}
	l.expiryTimer = time.AfterFunc(time.Until(l.deadline), l.checkExpiry)
	l.expiryArmed = true
	return l
}

// leaseEnd returns until when a lease set by a command sent at sent is
// surely still valid. The server started the lease after we sent the
// command, so sent+TTL is early enough as long as both clocks run at the
// same rate; one percent is taken off for clocks that do not.
func (r *Redis) leaseEnd(sent time.Time) time.Time {
	return sent.Add(r.opts.TTL - r.opts.TTL/100)
}

// Token returns the fencing token issued for key by this acquisition, or 0
// if key is not part of the lock.
func (l *redisLock) Token(key string) int64 {
	if i := slices.Index(l.ks.keys, key); i >= 0 {
		return l.fences[i]
	}
	return 0
}

// Lost returns a channel closed when the lease is lost while held.
func (l *redisLock) Lost() <-chan struct{} { return l.lost }

// Err returns nil while the lock is held, an error wrapping ErrLost once it
// was lost (even after Release), and ErrNotHeld once it was released.
func (l *redisLock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// loseLocked declares the lock lost with cause, unless it was lost or
// released already. l.mu must be held.
func (l *redisLock) loseLocked(cause error) {
	if l.err != nil {
		return
	}
	l.err = cause
	close(l.lost)
}

// Refresh extends the lease of every key by the TTL, in one round trip. It
// returns ErrNotHeld, and declares the lock lost, if any key is gone or
// held by another owner; ErrNotHeld if the lock was lost or released
// before; or an error from Redis, wrapped.
func (l *redisLock) Refresh(ctx context.Context) error {
	if l.Err() != nil {
		return ErrNotHeld
	}
	sent := time.Now()
	ok, err := refreshScript.Run(ctx, l.r.client, l.ks.lockKeys, l.token, l.r.opts.TTL.Milliseconds()).Bool()
	if err != nil {
		return fmt.Errorf("distlock: refresh %q: %w", l.ks.keys, err)
	}
	if !ok {
		l.mu.Lock()
		l.loseLocked(fmt.Errorf("%w: a key of %q is gone or held by another owner", ErrLost, l.ks.keys))
		l.mu.Unlock()
		return ErrNotHeld
	}
	l.mu.Lock()
	if end := l.r.leaseEnd(sent); end.After(l.deadline) {
		l.deadline = end
	}
	l.mu.Unlock()
	return nil
}

// Release stops the watchdog, waits for it, then deletes every key that
// still holds this lock's owner token and wakes the waiters on them, in one
// round trip. It returns ErrNotHeld if it was called before or if some key
// was no longer held (the others are released all the same), or an error
// from Redis, wrapped: the keys are then freed when their lease runs out.
func (l *redisLock) Release(ctx context.Context) error {
	l.mu.Lock()
	if l.released {
		l.mu.Unlock()
		return ErrNotHeld
	}
	l.released = true
	if l.err == nil {
		l.err = ErrNotHeld
	}
	if l.renewArmed && !l.renewTimer.Stop() {
		l.callbacks.Add(1) // fired: its callback will see released and call Done
	}
	if l.expiryArmed && !l.expiryTimer.Stop() {
		l.callbacks.Add(1)
	}
	l.renewArmed, l.expiryArmed = false, false
	l.mu.Unlock()
	l.callbacks.Wait()

	n, err := releaseScript.Run(ctx, l.r.client, l.ks.lockKeys, append([]any{l.token}, l.ks.releaseArgs...)...).Int()
	if err != nil {
		return fmt.Errorf("distlock: release %q: %w", l.ks.keys, err)
	}
	if n != len(l.ks.keys) {
		return fmt.Errorf("%w: %d of the %d keys of %q had expired", ErrNotHeld, len(l.ks.keys)-n, len(l.ks.keys), l.ks.keys)
	}
	return nil
}

// renew is renewTimer's callback: it extends the lease, and arms the timer
// again, sooner after a failed renewal (a network error, say), which is no
// loss by itself while the lease is still valid. A renewal that finds a key
// gone or taken declares the loss (in Refresh). A renewal that blocks past
// the deadline on a dead connection does not delay the loss: checkExpiry
// declares it on time.
func (l *redisLock) renew() {
	l.mu.Lock()
	l.renewArmed = false
	if l.released {
		l.mu.Unlock()
		l.callbacks.Done() // Release counted this fired callback
		return
	}
	l.callbacks.Add(1)
	l.mu.Unlock()
	defer l.callbacks.Done()

	err := l.Refresh(l.ctx)

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released || l.err != nil || errors.Is(err, ErrNotHeld) {
		return
	}
	every := l.r.opts.RenewEvery
	if err != nil {
		l.lastErr = err
		every = max(every/4, time.Millisecond)
	} else {
		l.lastErr = nil
	}
	l.renewTimer.Reset(every)
	l.renewArmed = true
}

// checkExpiry is expiryTimer's callback: it declares the lock lost once the
// lease's deadline has passed, or arms the timer for the deadline that a
// renewal moved.
func (l *redisLock) checkExpiry() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expiryArmed = false
	if l.released {
		l.callbacks.Done() // Release counted this fired callback
		return
	}
	if l.err != nil {
		return // lost already
	}
	if left := time.Until(l.deadline); left > 0 {
		l.expiryTimer.Reset(left)
		l.expiryArmed = true
		return
	}
	cause := fmt.Errorf("%w: the lease of %q ran out without a renewal", ErrLost, l.ks.keys)
	if l.lastErr != nil {
		cause = fmt.Errorf("%w: the lease of %q ran out; last renewal: %w", ErrLost, l.ks.keys, l.lastErr)
	}
	l.loseLocked(cause)
}
