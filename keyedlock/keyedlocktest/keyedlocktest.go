// Package keyedlocktest is the conformance suite of a keyed mutex: one lock
// per key, taken with a context, whose entries go away when nobody holds or
// waits for them. keyedlock.Mutex runs it, and so does the keyed mutex a
// workshop attendee writes (docs/workshop/write/keyedlock), one stage at a
// time:
//
//	func TestGrade(t *testing.T) {
//		keyedlocktest.RunStaged(t, func() keyedlocktest.Mutex { return new(keyedlock.Mutex) })
//	}
//
// The stages follow the way a keyed mutex is usually built: first it must
// exclude (a map of mutexes does), then forget keys nobody uses (deleting
// an entry while someone waits on it is the classic bug: two holders), then
// give up a wait when the context ends.
package keyedlocktest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Mutex is what the suite tests: keyedlock.Mutex's methods.
type Mutex interface {
	// Lock waits until it holds key, or until ctx ends: then it returns an
	// error wrapping ctx.Err() and holds nothing.
	Lock(ctx context.Context, key string) error
	// Unlock releases key.
	Unlock(key string)
	// Len returns the number of keys that have a holder or a waiter.
	Len() int
}

// hangLimit bounds every wait of the suite: a lock that never answers
// fails the test that waits for it instead of hanging until go test's
// -timeout.
const hangLimit = 10 * time.Second

type stage struct {
	name  string
	next  string // what to work on when the stage fails
	cases []testCase
}

type testCase struct {
	name string
	run  func(*testing.T, Mutex)
}

func stages() []stage {
	return []stage{
		{name: "1-exclusion", next: "two goroutines must never hold one key, and keys must not wait for each other", cases: []testCase{
			{"MutualExclusion", mutualExclusion},
			{"DifferentKeysDoNotWait", differentKeysDoNotWait},
		}},
		{name: "2-forgetting", next: "a key nobody holds or waits for must leave the map (Len 0), and never while someone still waits on it", cases: []testCase{
			{"ForgetsUnusedKeys", forgetsUnusedKeys},
			{"ExclusionWhileForgetting", exclusionWhileForgetting},
		}},
		{name: "3-cancellation", next: "a wait must end with the context's error, take nothing and leave nothing behind", cases: []testCase{
			{"EndedContextTakesNothing", endedContextTakesNothing},
			{"CancelWhileWaiting", cancelWhileWaiting},
		}},
	}
}

// Run runs every test of the suite as subtests of t, on a new Mutex from
// newMutex for each.
func Run(t *testing.T, newMutex func() Mutex) {
	t.Helper()
	for _, st := range stages() {
		for _, c := range st.cases {
			t.Run(c.name, func(t *testing.T) { c.run(t, newMutex()) })
		}
	}
}

// RunStaged runs the same tests one stage at a time and stops at the first
// stage that fails, with a message that says what that stage asks for: the
// grader of the write-it-yourself lab.
func RunStaged(t *testing.T, newMutex func() Mutex) {
	t.Helper()
	all := stages()
	for i, st := range all {
		passed := t.Run(st.name, func(t *testing.T) {
			for _, c := range st.cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newMutex()) })
			}
		})
		if !passed {
			t.Fatalf("stage %d of %d (%s) failed: %s. The later stages run once it passes.", i+1, len(all), st.name, st.next)
		}
		t.Logf("stage %d of %d (%s) passed", i+1, len(all), st.name)
	}
}

// ErrPanicked is wrapped by Contention.Err when Lock or Unlock panicked.
var ErrPanicked = errors.New("the mutex panicked")

// Contention is what Contend observed.
type Contention struct {
	Sections int   // critical sections run
	Overlaps int   // sections that found another holder of their key inside
	Err      error // the first error of a Lock
}

// Contend runs rounds critical sections in each of goroutines goroutines,
// spread over keys keys, and counts the sections that found another holder
// of their key inside. Each section yields, so that a lock that lets a
// second holder in is caught in the act.
func Contend(ctx context.Context, m Mutex, keys, goroutines, rounds int) Contention {
	inside := make([]atomic.Int32, keys)
	var (
		overlaps atomic.Int64
		errs     = make(chan error, 1) // the first error of any goroutine
		wg       sync.WaitGroup
	)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for g := range goroutines {
		wg.Go(func() {
			defer func() {
				// A second holder often shows as a panic of the lock's
				// own code (unlocking a mutex another holder replaced):
				// a failure to report, not a crash of the grader.
				if p := recover(); p != nil {
					report(fmt.Errorf("%w: %v", ErrPanicked, p))
				}
			}()
			for i := range rounds {
				k := (g + i) % keys
				key := fmt.Sprintf("seat-%d", k)
				if err := m.Lock(ctx, key); err != nil {
					report(fmt.Errorf("Lock(%q): %w", key, err))
					return
				}
				if inside[k].Add(1) != 1 {
					overlaps.Add(1)
				}
				runtime.Gosched()
				inside[k].Add(-1)
				m.Unlock(key)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// A goroutine is stuck in a Lock that ignores its context: the
		// goroutines are left behind, in a test that fails.
		report(fmt.Errorf("critical sections not over before the context ended (a Lock that never returns?): %w", ctx.Err()))
	}
	c := Contention{Sections: goroutines * rounds, Overlaps: int(overlaps.Load())}
	select {
	case c.Err = <-errs:
	default:
	}
	return c
}

func (c Contention) check(t *testing.T) {
	t.Helper()
	if c.Err != nil {
		t.Fatal(c.Err)
	}
	if c.Overlaps != 0 {
		t.Fatalf("%d of %d critical sections found another holder of their key inside", c.Overlaps, c.Sections)
	}
}

func mutualExclusion(t *testing.T, m Mutex) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*hangLimit)
	defer cancel()
	Contend(ctx, m, 2, 8, 300).check(t)
}

func differentKeysDoNotWait(t *testing.T, m Mutex) {
	lock(t, m, "A1")
	defer m.Unlock("A1")
	lock(t, m, "A2") // must not wait for A1
	m.Unlock("A2")
}

// lock takes key on m, failing t when that takes longer than hangLimit.
func lock(t *testing.T, m Mutex, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangLimit)
	defer cancel()
	if err := lockWithin(ctx, m, key); err != nil {
		t.Fatalf("Lock(%q) = %v, want it held within %v (is it held by someone, or waiting for another key?)", key, err, hangLimit)
	}
}

// lockWithin returns what m.Lock returns, or ctx.Err() when ctx ends first,
// so that a Lock that ignores its context fails the test instead of
// hanging it.
func lockWithin(ctx context.Context, m Mutex, key string) error {
	got := make(chan error, 1)
	go func() { got <- m.Lock(ctx, key) }()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no return from Lock when its context ended: %w", ctx.Err())
	}
}

func forgetsUnusedKeys(t *testing.T, m Mutex) {
	for i := range 1000 {
		key := fmt.Sprintf("seat-%d", i)
		lock(t, m, key)
		m.Unlock(key)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after 1000 keys were locked and unlocked, want 0: the map keeps every key it ever saw", n)
	}
}

func exclusionWhileForgetting(t *testing.T, m Mutex) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*hangLimit)
	defer cancel()
	Contend(ctx, m, 3, 12, 300).check(t)
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after every holder unlocked, want 0", n)
	}
}

func endedContextTakesNothing(t *testing.T, m Mutex) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := m.Lock(ctx, "C7"); !errors.Is(err, context.Canceled) {
		if err == nil {
			m.Unlock("C7")
		}
		t.Fatalf("Lock with an ended context = %v, want an error wrapping context.Canceled", err)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after a Lock that took nothing, want 0", n)
	}
}

func cancelWhileWaiting(t *testing.T, m Mutex) {
	lock(t, m, "C7")
	ctx, cancel := context.WithCancel(t.Context())
	// Time for the waiter to start waiting, which the suite cannot see: a
	// waiter cancelled before it waits takes the ended-context path, so a
	// busy machine makes this test prove less, never fail.
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	got := make(chan error, 1)
	go func() { got <- m.Lock(ctx, "C7") }()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("waiter's Lock of a held key = %v, want an error wrapping context.Canceled", err)
		}
	case <-time.After(hangLimit):
		t.Fatalf("waiter's Lock did not return within %v of its context's end", hangLimit)
	}
	m.Unlock("C7")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after the holder unlocked and the waiter gave up, want 0", n)
	}
	lock(t, m, "C7") // nobody holds it: not the waiter that gave up
	m.Unlock("C7")
}
