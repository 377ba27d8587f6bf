package naive

import (
	"os"
	"testing"
	"time"
)

// replay replays the interleaving from the package comment on m and
// reports whether C took the key while B held it. Hooks fix the order, so
// the result does not depend on luck; every wait is bounded, so a Lock that
// deadlocks fails the test with what it waited for.
func replay(t *testing.T, m *Mutex) (twoHolders bool) {
	t.Helper()
	const bound = 10 * time.Second
	m.Lock("C7") // 1. A holds C7

	fetched := make(chan struct{})
	m.beforeWait = func(string) { close(fetched) }
	bHolds := make(chan struct{})
	go func() {
		m.Lock("C7") // 2. B fetches A's mutex and blocks on it
		close(bHolds)
	}()
	select {
	case <-fetched:
	case <-time.After(bound):
		t.Fatalf("B's Lock did not reach m.beforeWait within %v: keep that call right before Lock blocks", bound)
	}
	m.beforeWait = nil // B has passed the hook; only B ever reads it

	m.Unlock("C7") // 3. A unlocks; the naive version deletes the entry B still uses
	select {
	case <-bHolds: // B now holds the key
	case <-time.After(bound):
		t.Fatalf("B never got the key A released (within %v)", bound)
	}

	// 4. C locks the key. A correct keyed mutex makes C wait for B; the
	// naive one lets C take a fresh mutex at once.
	cHolds := make(chan struct{})
	go func() {
		m.Lock("C7")
		close(cHolds)
	}()
	select {
	case <-cHolds:
		twoHolders = true
	case <-time.After(200 * time.Millisecond):
		// C is waiting, as it should: a Lock that returned later than this
		// would go unseen, so a busy machine can make this prove less,
		// never fail a correct mutex.
	}
	m.Unlock("C7") // B leaves
	select {
	case <-cHolds:
	case <-time.After(bound):
		t.Fatalf("C never got the key B released (within %v)", bound)
	}
	if !twoHolders {
		m.Unlock("C7") // C leaves
	}
	return twoHolders
}

// grading reports whether the attendee asked to grade a fix (lab 3).
func grading() bool { return os.Getenv("GRADE") == "1" }

// TestTwoHolders shows the bug: B and C both hold the key.
func TestTwoHolders(t *testing.T) {
	if grading() {
		t.Skip("GRADE=1 grades your fix with TestOneHolder instead")
	}
	if !replay(t, new(Mutex)) {
		t.Fatal("C waited for B: the naive mutex did not show its bug (fixed it? grade the fix: GRADE=1 go test -count=1 -timeout 60s ./keyedlock/naive)")
	}
	t.Log("B and C both hold C7: the bug this package exists to show")
}

// TestOneHolder grades the fix of lab 3: once Unlock forgets a key only
// when nobody holds or waits for it, C waits for B.
func TestOneHolder(t *testing.T) {
	if !grading() {
		t.Skip("the naive mutex has its bug until you fix it; then: GRADE=1 go test -count=1 -timeout 60s ./keyedlock/naive")
	}
	if replay(t, new(Mutex)) {
		t.Fatal("B and C both hold C7: Unlock deleted the entry B was still waiting on (count the holder and the waiters, delete at zero)")
	}
	m := new(Mutex)
	for _, k := range []string{"A1", "A2", "A3"} {
		m.Lock(k)
		m.Unlock(k)
	}
	if n := len(m.locks); n != 0 {
		t.Fatalf("%d keys left in the map after every key was unlocked: forget a key once nobody uses it", n)
	}
	t.Log("one holder of C7 at a time, and the map forgets unused keys: fixed")
}
