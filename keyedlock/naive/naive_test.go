package naive

import (
	"testing"
	"time"
)

// TestTwoHolders replays the interleaving from the package comment and
// expects the violation: B and C both hold the key. Hooks fix the order,
// so the test does not depend on luck or timing.
func TestTwoHolders(t *testing.T) {
	var m Mutex
	m.Lock("C7") // 1. A holds C7

	fetched := make(chan struct{})
	m.beforeWait = func(string) { close(fetched) }
	bHolds := make(chan struct{})
	go func() {
		m.Lock("C7") // 2. B fetches A's mutex and blocks on it
		close(bHolds)
	}()
	<-fetched
	m.beforeWait = nil // B has passed the hook; only B ever reads it

	m.Unlock("C7") // 3. A unlocks and deletes the entry B still uses
	select {
	case <-bHolds: // B now holds the old mutex
	case <-time.After(30 * time.Second):
		t.Fatal("B never got the key A released")
	}

	// 4. C finds no entry and takes a fresh mutex for the same key. With a
	// correct keyed mutex this Lock would wait for B; here it returns at once.
	cHolds := make(chan struct{})
	go func() {
		m.Lock("C7")
		close(cHolds)
	}()
	select {
	case <-cHolds:
		t.Log("B and C both hold C7: the bug this package exists to show")
	case <-time.After(30 * time.Second):
		t.Fatal("C waited for B: the naive mutex did not show its bug")
	}
}
