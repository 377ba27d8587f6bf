package keyedlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/keyedlock"
)

// deadlockTimeout bounds every wait that would hang if the lock were wrong.
// It is far above any real duration: reaching it means a deadlock or a
// dropped key, never a slow machine.
const deadlockTimeout = 30 * time.Second

// keyedLocker is what the exclusion checker needs from a keyed lock.
type keyedLocker interface {
	Lock(ctx context.Context, key string) error
	Unlock(key string)
}

// noLock is a keyed lock that excludes nothing. The checker must catch it.
type noLock struct{}

func (noLock) Lock(context.Context, string) error { return nil }
func (noLock) Unlock(string)                      {}

// waitQueued waits until n goroutines wait for key on m.
func waitQueued(t *testing.T, m *keyedlock.Mutex, key string, n int) {
	t.Helper()
	wait.For(t, deadlockTimeout, fmt.Sprintf("%d goroutines wait for %q", n, key), func() bool { return m.Waiting(key) == n })
}

// receive returns the next value from ch, failing the test if none comes
// before deadlockTimeout.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return wait.Recv(t, ch, deadlockTimeout, what+" (none: a deadlock or a dropped key)")
}

// checkExclusion runs many goroutines that lock a few keys over and over,
// and counts, inside each critical section, how many goroutines are inside
// it for that key. It returns how often it found more than one. With
// plainCounter it also increments an unsynchronized counter per key, which
// the race detector flags if exclusion ever fails, and checks the total.
func checkExclusion(t *testing.T, l keyedLocker, plainCounter bool) (violations int64) {
	t.Helper()
	const (
		keys       = 4
		goroutines = 16
		iterations = 500
	)
	type seat struct {
		inside atomic.Int32
		count  int // guarded by the lock under test
	}
	var seats [keys]seat
	var bad atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range iterations {
				k := (g + i) % keys
				key := "seat-" + strconv.Itoa(k)
				if err := l.Lock(context.Background(), key); err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if seats[k].inside.Add(1) != 1 {
					bad.Add(1)
				}
				if plainCounter {
					seats[k].count++
				}
				runtime.Gosched() // let others try to get in
				seats[k].inside.Add(-1)
				l.Unlock(key)
			}
		})
	}
	wg.Wait()
	if plainCounter {
		total := 0
		for k := range seats {
			total += seats[k].count
		}
		if total != goroutines*iterations {
			t.Errorf("counted %d critical sections, want %d", total, goroutines*iterations)
		}
	}
	return bad.Load()
}

func TestMutualExclusionUnderContention(t *testing.T) {
	var m keyedlock.Mutex
	if n := checkExclusion(t, &m, true); n != 0 {
		t.Fatalf("%d times two goroutines held one key", n)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after all unlocked, want 0", n)
	}
}

// TestExclusionCheckerCatchesNoLock shows the checker above can fail: on a
// lock that excludes nothing it must find overlapping holders.
func TestExclusionCheckerCatchesNoLock(t *testing.T) {
	if n := checkExclusion(t, noLock{}, false); n == 0 {
		t.Fatal("the checker found no overlap on a lock that excludes nothing")
	}
}

// TestNoSecondHolderAfterHandoff is the regression test for the classic
// keyed-mutex bug (see package naive): A holds a key, B waits for it, A
// unlocks. With the bug, A's Unlock deletes the key's entry while B still
// waits on the old lock, so C finds no entry and takes the key too, and B
// then takes the old lock: two holders. Here, after A's Unlock, either B
// or C may take the key (C may barge in before B runs), but never both:
// if C got it, B must still be waiting, and get it only after C leaves.
func TestNoSecondHolderAfterHandoff(t *testing.T) {
	const rounds = 200
	var m keyedlock.Mutex
	ctx := context.Background()
	var barged int
	for range rounds {
		if err := m.Lock(ctx, "C7"); err != nil { // A
			t.Fatal(err)
		}
		bLocked := make(chan error, 1)
		go func() { bLocked <- m.Lock(ctx, "C7") }()
		waitQueued(t, &m, "C7", 1)

		m.Unlock("C7")       // A leaves; B is woken to take C7
		if m.TryLock("C7") { // C came first
			barged++
			select {
			case <-bLocked:
				t.Fatal("B took C7 while C holds it: two holders")
			case <-time.After(time.Millisecond):
			}
			if n := m.Len(); n != 1 {
				t.Fatalf("Len = %d while C holds C7 and B waits, want 1", n)
			}
			m.Unlock("C7") // C leaves; now B
		}
		if err := receive(t, bLocked, "B's Lock"); err != nil {
			t.Fatalf("B: Lock = %v", err)
		}
		if m.TryLock("C7") {
			t.Fatal("C took C7 while B holds it: two holders")
		}
		m.Unlock("C7")
		if n := m.Len(); n != 0 {
			t.Fatalf("Len = %d after everyone left, want 0", n)
		}
	}
	t.Logf("C barged in ahead of the woken B in %d of %d rounds", barged, rounds)
}

func TestDifferentKeysDoNotWait(t *testing.T) {
	var m keyedlock.Mutex
	if !m.TryLock("C7") {
		t.Fatal("TryLock(C7) on a fresh Mutex failed")
	}
	// Lock(C8) must not wait for C7's holder, who never leaves during it.
	ctx, cancel := context.WithTimeout(context.Background(), deadlockTimeout)
	defer cancel()
	if err := m.Lock(ctx, "C8"); err != nil {
		t.Fatalf("Lock(C8) while C7 is held: %v", err)
	}
	if n := m.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	m.Unlock("C8")
	m.Unlock("C7")
}

func TestTryLock(t *testing.T) {
	var m keyedlock.Mutex
	if !m.TryLock("C7") {
		t.Fatal("TryLock of a free key failed")
	}
	if m.TryLock("C7") {
		t.Fatal("TryLock of a held key succeeded")
	}
	m.Unlock("C7")
	if !m.TryLock("C7") {
		t.Fatal("TryLock after Unlock failed")
	}
	m.Unlock("C7")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestNoLeakAfterManyDistinctKeys(t *testing.T) {
	var m keyedlock.Mutex
	ctx := context.Background()
	const workers = 4
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			buf := make([]byte, 0, 32)
			for i := w; i < distinctKeys; i += workers {
				buf = strconv.AppendInt(append(buf[:0], "seat-"...), int64(i), 10)
				key := string(buf)
				if err := m.Lock(ctx, key); err != nil {
					t.Error(err)
					return
				}
				m.Unlock(key)
			}
		})
	}
	wg.Wait()
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after locking and unlocking %d keys, want 0", n, distinctKeys)
	}
}

func TestUncontendedLockUnlockDoesNotAllocate(t *testing.T) {
	var m keyedlock.Mutex
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := m.Lock(ctx, "C7"); err != nil {
			t.Fatal(err)
		}
		m.Unlock("C7")
	})
	if allocs != 0 {
		t.Fatalf("Lock+Unlock allocates %v times, want 0", allocs)
	}
}

// expiring is a context whose deadline passes when the test says so, so
// that a test can end a wait by deadline without depending on the clock.
type expiring struct {
	context.Context
	done chan struct{}
}

func newExpiring() *expiring {
	return &expiring{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiring) Done() <-chan struct{} { return c.done }
func (c *expiring) expire()               { close(c.done) }

func (c *expiring) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestLockCancelledWhileWaiting(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ctx     func() (ctx context.Context, end func())
		wantErr error
	}{
		{"cancel", func() (context.Context, func()) {
			return context.WithCancel(context.Background())
		}, context.Canceled},
		{"deadline", func() (context.Context, func()) {
			ctx := newExpiring()
			return ctx, ctx.expire
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m keyedlock.Mutex
			bg := context.Background()
			if err := m.Lock(bg, "C7"); err != nil { // the holder
				t.Fatal(err)
			}
			ctx, end := tc.ctx()
			cancelled := make(chan error, 1)
			go func() { cancelled <- m.Lock(ctx, "C7") }()
			waitQueued(t, &m, "C7", 1)
			behind := make(chan error, 1) // queued after the one that gives up
			go func() { behind <- m.Lock(bg, "C7") }()
			waitQueued(t, &m, "C7", 2)

			end()
			if err := receive(t, cancelled, "cancelled Lock"); !errors.Is(err, tc.wantErr) {
				t.Fatalf("cancelled Lock = %v, want %v", err, tc.wantErr)
			}
			if n := m.Waiting("C7"); n != 1 {
				t.Fatalf("Waiting = %d after the cancelled waiter left, want 1", n)
			}
			m.Unlock("C7")
			if err := receive(t, behind, "Lock behind the cancelled one"); err != nil {
				t.Fatalf("Lock behind the cancelled one = %v", err)
			}
			m.Unlock("C7")
			if n := m.Len(); n != 0 {
				t.Fatalf("Len = %d at the end, want 0", n)
			}
		})
	}
}

func TestLockWithEndedContextTakesNothing(t *testing.T) {
	var m keyedlock.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Lock(ctx, "C7"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock = %v, want context.Canceled", err)
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

// TestCancelRacingHandoff cancels a waiter at the instant the holder
// unlocks, many times. Whichever wins, the key must end up with exactly
// one owner: the cancelled waiter if its Lock returned nil, otherwise the
// waiter behind it. A key dropped by a cancelled waiter that had just been
// handed it would leave the one behind waiting for ever.
func TestCancelRacingHandoff(t *testing.T) {
	const iterations = 2000
	var m keyedlock.Mutex
	bg := context.Background()
	var won, cancelled int
	for i := range iterations {
		if err := m.Lock(bg, "C7"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(bg)
		racer := make(chan error, 1)
		go func() { racer <- m.Lock(ctx, "C7") }()
		waitQueued(t, &m, "C7", 1)
		behind := make(chan error, 1)
		go func() { behind <- m.Lock(bg, "C7") }()
		waitQueued(t, &m, "C7", 2)

		// Vary who goes first. Cancelling first wakes the racer for its
		// context, and the Unlock right after usually hands it the key
		// before it runs: the case where it must pass the key on.
		switch i % 3 {
		case 0:
			cancel()
			m.Unlock("C7")
		case 1:
			m.Unlock("C7")
			cancel()
		default:
			go cancel()
			m.Unlock("C7")
		}

		switch err := receive(t, racer, "racing Lock"); {
		case err == nil:
			won++
			m.Unlock("C7")
		case errors.Is(err, context.Canceled):
			cancelled++
		default:
			t.Fatalf("racing Lock = %v", err)
		}
		if err := receive(t, behind, "Lock behind the racer"); err != nil {
			t.Fatal(err)
		}
		m.Unlock("C7")
		if n := m.Len(); n != 0 {
			t.Fatalf("Len = %d after an iteration, want 0", n)
		}
	}
	t.Logf("racer got the key %d times, was cancelled %d times", won, cancelled)
	if won == 0 || cancelled == 0 {
		t.Fatalf("only one side of the race happened (won %d, cancelled %d)", won, cancelled)
	}
}

// TestQueuedWaitersServedInArrivalOrder queues waiters one by one behind a
// holder. With nobody arriving later to barge in, each Unlock wakes the
// oldest waiter, so they must be served in the order they queued.
func TestQueuedWaitersServedInArrivalOrder(t *testing.T) {
	const waiters = 20
	var m keyedlock.Mutex
	ctx := context.Background()
	if err := m.Lock(ctx, "C7"); err != nil {
		t.Fatal(err)
	}
	var order []int // appended to while holding C7
	done := make(chan struct{}, waiters)
	for i := range waiters {
		go func() {
			if err := m.Lock(ctx, "C7"); err != nil {
				t.Error(err)
			}
			order = append(order, i)
			m.Unlock("C7")
			done <- struct{}{}
		}()
		waitQueued(t, &m, "C7", i+1) // i queues before i+1 starts
	}
	m.Unlock("C7")
	for range waiters {
		receive(t, done, "waiter")
	}
	if want := intsUpTo(waiters); !slices.Equal(order, want) {
		t.Fatalf("waiters served in order %v, want %v", order, want)
	}
}

// TestNoStarvation has two goroutines hold a key for a short while and lock
// it again the moment they unlock it, over and over, so the key is free
// only for the instant between their Unlock and their next Lock. A third
// goroutine that wants the key is woken at each Unlock, but the goroutine
// that just unlocked is already running and takes the key back first. Only
// the starvation rule (a waiter kept waiting longer than a millisecond is
// handed the key) lets the third goroutine in; without it, it waits for
// thousands of critical sections.
func TestNoStarvation(t *testing.T) {
	const (
		hold    = 50 * time.Microsecond
		maxWait = 500 // critical sections of the others; 1ms is about 20
		rounds  = 5
	)
	var m keyedlock.Mutex
	ctx := context.Background()
	var sections atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := m.Lock(ctx, "C7"); err != nil {
					t.Error(err)
					return
				}
				sections.Add(1)
				for start := time.Now(); time.Since(start) < hold; {
					// Busy: a holder that sleeps would let the waiter run.
				}
				m.Unlock("C7")
			}
		})
	}
	defer wg.Wait()
	defer close(stop)

	for range rounds {
		wait.For(t, deadlockTimeout, "the two others in their stride, 100 sections", func() bool { return sections.Load() >= 100 })
		before := sections.Load()
		lockCtx, cancel := context.WithTimeout(ctx, deadlockTimeout)
		err := m.Lock(lockCtx, "C7")
		cancel()
		if err != nil {
			t.Fatalf("the waiter's Lock: %v", err)
		}
		waited := sections.Load() - before
		m.Unlock("C7")
		t.Logf("the waiter got the key after %d critical sections of the others", waited)
		if waited > maxWait {
			t.Fatalf("the waiter got the key after %d critical sections of the others, want at most %d: starved by barging", waited, maxWait)
		}
		sections.Store(0)
	}
}

func intsUpTo(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func TestUnlockOfUnlockedKeyPanics(t *testing.T) {
	var m keyedlock.Mutex
	mustPanic := func(name string) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, "unlock of unlocked key") {
				t.Fatalf("%s: recovered %v, want an unlock-of-unlocked-key panic", name, r)
			}
		}()
		m.Unlock("C7")
	}
	mustPanic("never locked")
	m.TryLock("C7")
	m.Unlock("C7")
	mustPanic("unlocked twice")
	// The panic must not leave the Mutex's own lock held.
	if !m.TryLock("C7") {
		t.Fatal("TryLock after a recovered panic failed")
	}
}

func TestLockAllTakesEachKeyOnceInAnyOrder(t *testing.T) {
	var m keyedlock.Mutex
	keys := []string{"C8", "C7", "C8", "A1"}
	unlock, err := m.LockAll(context.Background(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Len(); n != 3 {
		t.Fatalf("Len = %d, want 3 distinct keys", n)
	}
	if !slices.Equal(keys, []string{"C8", "C7", "C8", "A1"}) {
		t.Fatalf("LockAll reordered the caller's slice: %v", keys)
	}
	unlock()
	unlock() // a second call does nothing
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after unlock, want 0", n)
	}
}

func TestLockAllReleasesWhatItTookOnFailure(t *testing.T) {
	var m keyedlock.Mutex
	m.TryLock("C8") // someone else holds the middle key
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		_, err := m.LockAll(ctx, "C9", "C8", "C7")
		result <- err
	}()
	waitQueued(t, &m, "C8", 1) // C7 is held, C8 awaited
	cancel()
	if err := receive(t, result, "LockAll"); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockAll = %v, want context.Canceled", err)
	}
	if n := m.Len(); n != 1 {
		t.Fatalf("Len = %d, want 1 (only the other holder's C8)", n)
	}
	if !m.TryLock("C7") {
		t.Fatal("C7 still held after LockAll failed")
	}
}

// TestLockAllAdversarialOrders has goroutines lock random, overlapping sets
// of keys, each given in a random order. Without the canonical order they
// deadlock within a few iterations.
func TestLockAllAdversarialOrders(t *testing.T) {
	const (
		keys       = 6
		goroutines = 8
		iterations = 300
	)
	var m keyedlock.Mutex
	var inside [keys]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 42))
			for range iterations {
				perm := rng.Perm(keys)[:2+rng.IntN(keys-1)]
				names := make([]string, len(perm))
				for i, k := range perm {
					names[i] = "seat-" + strconv.Itoa(k)
				}
				unlock, err := m.LockAll(context.Background(), names...)
				if err != nil {
					t.Error(err)
					return
				}
				for _, k := range perm {
					if inside[k].Add(1) != 1 {
						t.Errorf("two holders of seat-%d", k)
					}
				}
				runtime.Gosched()
				for _, k := range perm {
					inside[k].Add(-1)
				}
				unlock()
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	receive(t, finished, "LockAll goroutines")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d at the end, want 0", n)
	}
}

func TestDo(t *testing.T) {
	var m keyedlock.Mutex
	ctx := context.Background()
	errPayment := errors.New("payment declined")

	err := m.Do(ctx, "C7", func() error {
		if m.TryLock("C7") {
			t.Error("C7 not held inside Do")
		}
		return errPayment
	})
	if !errors.Is(err, errPayment) {
		t.Fatalf("Do = %v, want fn's error", err)
	}

	func() {
		defer func() { _ = recover() }()
		_ = m.Do(ctx, "C7", func() error { panic("boom") })
	}()
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after Do returned and after Do panicked, want 0", n)
	}

	m.TryLock("C7")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	if err := m.Do(cancelled, "C7", func() error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Do with an ended context = %v, ran fn = %v; want context.Canceled, not run", err, ran)
	}
}
