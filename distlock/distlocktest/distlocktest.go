// Package distlocktest is the conformance suite of distlock: every backend
// runs it, so every backend keeps the promises of distlock.Locker and
// distlock.Lock the same way.
//
// A backend's test calls Run with a function that makes a new, independent
// Locker (its own client, as a separate process would have) and Options
// that say what the backend can do:
//
//	func TestConformance(t *testing.T) {
//		distlocktest.Run(t, func(t *testing.T) distlock.Locker {
//			return newLockerForTest(t) // same key space for one t, new client each call
//		}, distlocktest.Options{TTL: time.Second, Fencing: true})
//	}
//
// The suite checks mutual exclusion under contention, expiry of a vanished
// holder, refusal of a non-owner's release and refresh, detection of a lost
// lease, cancellation while waiting, waits that outlast the lease, fencing
// tokens and all-or-nothing multi-key locks.
package distlocktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/distlock"
)

// Options says how the backend under test behaves, and gives the suite the
// hooks some tests need. Tests whose hook is nil are skipped.
type Options struct {
	// TTL is the lease of the locks the Lockers hand out. Tests wait a few
	// TTLs, so keep it short; about a second suits a loaded CI machine.
	TTL time.Duration

	// NewNonRenewing returns a Locker on the same keys as newLocker's whose
	// locks are never renewed: it plays a holder that crashed while holding.
	NewNonRenewing func(t *testing.T) distlock.Locker

	// Expire ends the lease on key at once, as if it had run out or the
	// server had lost it (for Redis: delete the lock key).
	Expire func(t *testing.T, key string)

	// Fencing says whether Lock.Token returns fencing tokens.
	Fencing bool
}

// Run runs the conformance suite as subtests of t. newLocker is called
// several times per subtest; the Lockers it returns for one t must share
// their keys, and those for different t must not.
func Run(t *testing.T, newLocker func(t *testing.T) distlock.Locker, opts Options) {
	t.Helper()
	if opts.TTL <= 0 {
		t.Fatal("distlocktest: Options.TTL must be set")
	}
	s := &suite{newLocker: newLocker, opts: opts}
	for _, st := range s.stages() {
		for _, c := range st.cases {
			t.Run(c.name, c.run)
		}
	}
}

type suite struct {
	newLocker func(t *testing.T) distlock.Locker
	opts      Options
}

// keys returns n fresh keys sharing a hash tag, so that a Redis Cluster
// can lock them together.
func keys(n int) []string {
	tag := uuid.NewString()[:8]
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("{%s}:seat-%d", tag, i+1)
	}
	return ks
}

// free is how long the suite lets a key that nobody holds take to obtain:
// a deadline for a slow, loaded machine, not a measure of speed.
const free = 15 * time.Second

func obtain(t *testing.T, l distlock.Locker, wait time.Duration, keys ...string) distlock.Lock {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	lock, err := l.Obtain(ctx, keys...)
	if err != nil {
		t.Fatalf("Obtain(%q): %v", keys, err)
	}
	return lock
}

// obtainFree takes key, which must be free now: with one attempt where the
// Locker can make one (a key still taken is refused at once, however slow
// the machine), else by waiting at most within (under one lease, so that a
// key left taken is not freed by its lease running out first).
func obtainFree(t *testing.T, l distlock.Locker, within time.Duration, key string) distlock.Lock {
	t.Helper()
	tl, ok := l.(TryLocker)
	if !ok {
		return obtain(t, l, within, key)
	}
	ctx, cancel := context.WithTimeout(t.Context(), free)
	defer cancel()
	lock, err := tl.TryObtain(ctx, key)
	if err != nil {
		t.Fatalf("TryObtain(%q) of a key that should be free: %v", key, err)
	}
	return lock
}

// release releases lock at the end of the test, whatever it returns: the
// test itself checks Release where it matters.
func releaseAtEnd(t *testing.T, lock distlock.Lock) {
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
}

// holdNewKey obtains a key of its own from l, and releases it when t
// ends.
func holdNewKey(t *testing.T, l distlock.Locker) (string, distlock.Lock) {
	t.Helper()
	key := keys(1)[0]
	lock := obtain(t, l, free, key)
	releaseAtEnd(t, lock)
	return key, lock
}

// assertNotObtainable checks that keys cannot be had within wait.
func assertNotObtainable(t *testing.T, l distlock.Locker, wait time.Duration, keys ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	lock, err := l.Obtain(ctx, keys...)
	if err == nil {
		_ = lock.Release(context.Background())
		t.Fatalf("Obtain(%q) succeeded while it should be held", keys)
	}
	if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain(%q) = %v, want ErrNotAcquired joined with DeadlineExceeded", keys, err)
	}
}

func (s *suite) mutualExclusion(t *testing.T) {
	t.Parallel()
	const lockers, perLocker, rounds = 3, 2, 15 // 90 critical sections by 6 goroutines
	ls := make([]distlock.Locker, lockers)
	for i := range ls {
		ls[i] = s.newLocker(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	contend(ctx, ls, perLocker, rounds, keys(1)[0], s.opts.Fencing).check(t)
}

// ExclusionOnKeys runs rounds critical sections on every key at once, in
// perKey goroutines per key, all on the one Locker l, and fails t if two
// sections of a key overlapped (or, with fencing, if a fencing token did
// not grow). It is for a backend's own tests of many goroutines sharing
// one Locker, such as the Redis backend's shared round trips; the suite's
// exclusion test gives each Locker only two goroutines.
func ExclusionOnKeys(t *testing.T, l distlock.Locker, keys []string, perKey, rounds int, fencing bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	results := make([]contention, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() { results[i] = contend(ctx, []distlock.Locker{l}, perKey, rounds, key, fencing) })
	}
	wg.Wait()
	for i, r := range results {
		t.Run(keys[i], r.check)
	}
}

// ReleaseWakesWaiter takes the keys held on holder, starts an Obtain of
// wanted on waiter, and releases held once the waiter is waiting: it fails
// t unless the waiter then gets its keys within 10 seconds. It is for a
// backend's test that a release wakes its waiters: give waiter a backoff
// (and the locks a lease) longer than that, so that a waiter that only
// polled would still be asleep when its context ends.
func ReleaseWakesWaiter(t *testing.T, holder, waiter TryLocker, held, wanted []string) {
	t.Helper()
	lock, err := holder.TryObtain(t.Context(), held...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		lock, err := waiter.Obtain(ctx, wanted...)
		if err == nil {
			err = lock.Release(ctx)
		}
		got <- err
	}()
	// Time for the waiter to start waiting: the suite cannot see when it
	// does. A waiter that is not waiting yet takes the keys at its first
	// attempt once they are released, so a busy machine can make this
	// test prove less, never fail.
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("Obtain(%q) returned while %q was held: %v", wanted, held, err)
	default:
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Obtain(%q) after the release of %q: %v (not woken by the release)", wanted, held, err)
	}
}

// contention is what contend observed.
type contention struct {
	sections    int   // critical sections run
	overlaps    int   // critical sections that found another one running
	counter     int   // the shared counter, incremented once per section
	staleTokens int   // fencing tokens not above the previous section's
	err         error // the first error from Obtain or Release
}

// check fails t if the sections of r were not mutually exclusive.
func (r contention) check(t *testing.T) {
	t.Helper()
	if r.overlaps != 0 || r.counter != r.sections || r.staleTokens != 0 {
		t.Errorf("exclusion broken: %d overlapping critical sections, counter %d after %d sections, %d fencing tokens not above the previous holder's",
			r.overlaps, r.counter, r.sections, r.staleTokens)
	}
	if r.err != nil {
		t.Error(r.err)
	}
}

// contend runs rounds critical sections on key in perLocker goroutines per
// locker. Each section reads a shared counter, yields, and writes it back
// plus one: without mutual exclusion, increments are lost and sections
// overlap. The suite's own tests run it on a locker that does not exclude,
// to prove it notices.
func contend(ctx context.Context, ls []distlock.Locker, perLocker, rounds int, key string, fencing bool) contention {
	var (
		inside   atomic.Int32
		overlaps atomic.Int32
		stale    atomic.Int32
		// counter and lastTok are only used inside the critical section.
		// They are atomics only because the race detector cannot see the
		// ordering that the lock's round trips through the backend give:
		// a Load followed by a separate Store still loses updates when
		// sections overlap.
		counter  atomic.Int64
		lastTok  atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for _, l := range ls {
		for range perLocker {
			wg.Go(func() {
				for range rounds {
					lock, err := l.Obtain(ctx, key)
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("obtain: %w", err) })
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					if fencing {
						if tok := lock.Token(key); tok <= lastTok.Load() {
							stale.Add(1)
						} else {
							lastTok.Store(tok)
						}
					}
					c := counter.Load()
					time.Sleep(200 * time.Microsecond) // widen the window a broken lock lets others in
					counter.Store(c + 1)
					inside.Add(-1)
					if err := lock.Release(ctx); err != nil {
						// Keep going: a broken lock should show in the counts too.
						errOnce.Do(func() { firstErr = fmt.Errorf("release: %w", err) })
					}
				}
			})
		}
	}
	wg.Wait()
	return contention{
		sections:    len(ls) * perLocker * rounds,
		overlaps:    int(overlaps.Load()),
		counter:     int(counter.Load()),
		staleTokens: int(stale.Load()),
		err:         firstErr,
	}
}

func (s *suite) expiryOfVanishedHolder(t *testing.T) {
	if s.opts.NewNonRenewing == nil {
		t.Skip("no Options.NewNonRenewing")
	}
	t.Parallel()
	key := keys(1)[0]
	start := time.Now()
	gone := obtain(t, s.opts.NewNonRenewing(t), free, key) // never released
	releaseAtEnd(t, gone)

	lock := obtain(t, s.newLocker(t), 10*s.opts.TTL+free, key)
	releaseAtEnd(t, lock)
	if waited := time.Since(start); waited < s.opts.TTL*9/10 {
		t.Fatalf("key taken over after %v, before the TTL %v of the vanished holder ran out", waited, s.opts.TTL)
	}
}

func (s *suite) nonOwnerRefused(t *testing.T) {
	if s.opts.Expire == nil {
		t.Skip("no Options.Expire")
	}
	t.Parallel()
	key, stale := holdNewKey(t, s.newLocker(t))
	s.opts.Expire(t, key)
	owner := obtain(t, s.newLocker(t), free, key)
	releaseAtEnd(t, owner)

	ctx := t.Context()
	if err := stale.Refresh(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("stale holder's Refresh = %v, want ErrNotHeld", err)
	}
	if err := stale.Err(); !errors.Is(err, distlock.ErrLost) {
		t.Fatalf("stale holder's Err after a refused Refresh = %v, want ErrLost", err)
	}
	if err := stale.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("stale holder's Release = %v, want ErrNotHeld", err)
	}
	if err := owner.Err(); err != nil {
		t.Fatalf("owner's Err after the stale holder's release = %v, want nil", err)
	}
	if err := owner.Refresh(ctx); err != nil {
		t.Fatalf("owner's Refresh = %v, want nil", err)
	}
	assertNotObtainable(t, s.newLocker(t), 200*time.Millisecond, key)
	if err := owner.Release(ctx); err != nil {
		t.Fatalf("owner's Release = %v", err)
	}
	if err := owner.Release(ctx); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	if err := owner.Err(); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Err after Release = %v, want ErrNotHeld", err)
	}
	select {
	case <-owner.Lost():
		t.Fatal("Release closed Lost")
	default:
	}
}

// waitLost waits for lock's Lost channel and checks Err.
func (s *suite) waitLost(t *testing.T, lock distlock.Lock, within time.Duration) {
	t.Helper()
	select {
	case <-lock.Lost():
	case <-time.After(within):
		t.Fatalf("Lost not closed within %v", within)
	}
	if err := lock.Err(); !errors.Is(err, distlock.ErrLost) {
		t.Fatalf("Err after Lost = %v, want ErrLost", err)
	}
}

func (s *suite) lossOnDelete(t *testing.T) {
	if s.opts.Expire == nil {
		t.Skip("no Options.Expire")
	}
	t.Parallel()
	key, lock := holdNewKey(t, s.newLocker(t))
	if err := lock.Err(); err != nil {
		t.Fatalf("Err while held = %v", err)
	}
	s.opts.Expire(t, key)
	s.waitLost(t, lock, 5*s.opts.TTL+free)
	if err := lock.Release(t.Context()); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release after loss = %v, want ErrNotHeld", err)
	}
}

func (s *suite) lossOnExpiry(t *testing.T) {
	if s.opts.NewNonRenewing == nil {
		t.Skip("no Options.NewNonRenewing")
	}
	t.Parallel()
	_, lock := holdNewKey(t, s.opts.NewNonRenewing(t))
	s.waitLost(t, lock, 5*s.opts.TTL+free)
}

func (s *suite) cancelWhileWaiting(t *testing.T) {
	t.Parallel()
	key, holder := holdNewKey(t, s.newLocker(t))
	waiter := s.newLocker(t)

	t.Run("Canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := waiter.Obtain(ctx, key)
		if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Obtain = %v, want ErrNotAcquired and context.Canceled", err)
		}
	})
	t.Run("DeadlineExceeded", func(t *testing.T) {
		assertNotObtainable(t, waiter, 100*time.Millisecond, key)
	})
	if err := holder.Err(); err != nil {
		t.Fatalf("holder's Err = %v, want nil", err)
	}
}

func (s *suite) waitOutlastsLease(t *testing.T) {
	t.Parallel()
	key, holder := holdNewKey(t, s.newLocker(t))

	var released atomic.Bool
	got := make(chan error, 1)
	go func() {
		lock, err := s.newLocker(t).Obtain(t.Context(), key) // no deadline of its own
		if err == nil {
			if !released.Load() {
				err = errors.New("waiter got the key before the holder released it")
			}
			_ = lock.Release(context.Background())
		}
		got <- err
	}()

	time.Sleep(s.opts.TTL * 5 / 2) // the time under test: longer than a lease
	if err := holder.Err(); err != nil {
		t.Fatalf("holder's Err after 2.5 TTL = %v, want nil (renewed)", err)
	}
	released.Store(true)
	if err := holder.Release(t.Context()); err != nil {
		t.Fatalf("holder's Release = %v", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(free):
		t.Fatalf("waiter did not get the key within %v of its release", free)
	}
}

func (s *suite) fencingIncreases(t *testing.T) {
	if !s.opts.Fencing {
		t.Skip("backend has no fencing tokens")
	}
	t.Parallel()
	key := keys(1)[0]
	ls := []distlock.Locker{s.newLocker(t), s.newLocker(t)}
	var last int64
	for i := range 6 {
		lock := obtain(t, ls[i%2], free, key)
		tok := lock.Token(key)
		if tok <= last {
			t.Fatalf("holder %d got fencing token %d, not above the previous %d", i, tok, last)
		}
		last = tok
		if tok := lock.Token("not-" + key); tok != 0 {
			t.Fatalf("Token of a key not locked = %d, want 0", tok)
		}
		if i == 3 && s.opts.Expire != nil {
			s.opts.Expire(t, key) // the next token must not restart with the lease
			_ = lock.Release(t.Context())
			continue
		}
		if err := lock.Release(t.Context()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
}

func (s *suite) multiKeyAllOrNothing(t *testing.T) {
	t.Parallel()
	ks := keys(3)
	a, b := s.newLocker(t), s.newLocker(t)

	middle := obtain(t, a, free, ks[1])
	releaseAtEnd(t, middle)
	assertNotObtainable(t, b, 300*time.Millisecond, ks...)

	// Nothing of the refused set was left taken. A key left taken would be
	// freed by its lease running out, so wait well under one lease.
	for _, k := range []string{ks[0], ks[2]} {
		lock := obtainFree(t, a, s.opts.TTL/2, k)
		if err := lock.Release(t.Context()); err != nil {
			t.Fatalf("Release(%q): %v", k, err)
		}
	}

	if err := middle.Release(t.Context()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	all := obtain(t, b, free, append(ks, ks[0])...) // a duplicate is taken once
	releaseAtEnd(t, all)
	for _, k := range ks {
		if s.opts.Fencing && all.Token(k) <= 0 {
			t.Fatalf("Token(%q) = %d, want a fencing token", k, all.Token(k))
		}
		assertNotObtainable(t, a, 100*time.Millisecond, k)
	}
	if err := all.Release(t.Context()); err != nil {
		t.Fatalf("Release of the whole set: %v", err)
	}
	for _, k := range ks {
		lock := obtain(t, a, free, k)
		_ = lock.Release(t.Context())
	}
}
