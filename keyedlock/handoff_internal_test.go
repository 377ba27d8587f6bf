package keyedlock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
)

// These tests drive, deterministically, the moments where Unlock hands a
// key to a waiter, or wakes it to take the key, while that waiter's context
// ends: they queue a waiter by hand, Unlock, and then take the path Lock
// takes when its select picks ctx.Done() over the token.

// queueWaiter queues a waiter by hand for key, held by someone else. A
// starving one has waited long enough for Unlock to hand it the key
// directly; another is only woken to take it.
func queueWaiter(t *testing.T, m *Mutex, key string, starving bool) *waiter {
	t.Helper()
	w := m.lockOrEnqueue(key)
	if w == nil {
		t.Fatalf("lockOrEnqueue took %q, which is held", key)
	}
	m.mu.Lock()
	w.starving = starving
	m.mu.Unlock()
	return w
}

// lockBehind starts a goroutine that locks key and waits until it queued
// as the n-th waiter; its Lock's result arrives on the returned channel.
func lockBehind(t *testing.T, m *Mutex, key string, n int) <-chan error {
	t.Helper()
	result := make(chan error, 1)
	go func() { result <- m.Lock(context.Background(), key) }()
	wait.For(t, 10*time.Second, fmt.Sprintf("a goroutine queued as waiter %d of %q", n, key), func() bool { return m.Waiting(key) == n })
	return result
}

// mustGet fails the test unless the Lock behind returns nil in time.
func mustGet(t *testing.T, result <-chan error, what string) {
	t.Helper()
	select {
	case err := <-result:
		if err != nil {
			t.Fatalf("%s: Lock = %v", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never got the key: it was dropped", what)
	}
}

// abandonCases are the two ways Unlock can leave a waiter owed something
// when its context ends: handed the key (it was starving), or woken to take
// the freed key.
var abandonCases = []struct {
	name     string
	starving bool
}{
	{"handed the key", true},
	{"woken to take it", false},
}

// TestAbandonPassesKeyOn: a waiter whose context ends just after Unlock
// handed it the key, or woke it to take the key, must pass the key (or the
// wake-up) to the next waiter; dropping it leaves the next one asleep for
// ever behind a key nobody holds.
func TestAbandonPassesKeyOn(t *testing.T) {
	for _, tc := range abandonCases {
		t.Run(tc.name, func(t *testing.T) {
			var m Mutex
			m.TryLock("C7")
			w := queueWaiter(t, &m, "C7", tc.starving) // its context will end
			next := lockBehind(t, &m, "C7", 2)

			m.Unlock("C7")
			if w.granted != tc.starving || !w.woken {
				t.Fatalf("after Unlock: granted %v, woken %v; want granted %v, woken", w.granted, w.woken, tc.starving)
			}
			m.abandon("C7", w)

			mustGet(t, next, "the next waiter")
			m.Unlock("C7")
			if n := m.Len(); n != 0 {
				t.Fatalf("Len = %d after everyone left, want 0", n)
			}
		})
	}
}

func TestAbandonWithNoOtherWaiterFreesKey(t *testing.T) {
	for _, tc := range abandonCases {
		t.Run(tc.name, func(t *testing.T) {
			var m Mutex
			m.TryLock("C7")
			w := queueWaiter(t, &m, "C7", tc.starving)
			m.Unlock("C7")
			m.abandon("C7", w)
			if n := m.Len(); n != 0 {
				t.Fatalf("Len = %d, want 0: the abandoned key was kept", n)
			}
			if !m.TryLock("C7") {
				t.Fatal("C7 still locked after its only waiter abandoned it")
			}
		})
	}
}

func TestAbandonBeforeGrantLeavesQueue(t *testing.T) {
	var m Mutex
	m.TryLock("C7")
	w1 := m.lockOrEnqueue("C7")
	w2 := m.lockOrEnqueue("C7")
	w3 := m.lockOrEnqueue("C7")
	m.abandon("C7", w2) // from the middle
	if n := m.Waiting("C7"); n != 2 {
		t.Fatalf("Waiting = %d, want 2", n)
	}
	m.abandon("C7", w3) // from the back
	m.abandon("C7", w1) // from the front
	if n := m.Waiting("C7"); n != 0 {
		t.Fatalf("Waiting = %d, want 0", n)
	}
	m.Unlock("C7")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

// TestWokenWaiterThatLosesKeepsItsPlace: a waiter woken by Unlock that
// finds the key taken by a newcomer stays at the front of the queue,
// ahead of waiters that came after it.
func TestWokenWaiterThatLosesKeepsItsPlace(t *testing.T) {
	var m Mutex
	m.TryLock("C7")
	w := m.lockOrEnqueue("C7")
	behind := m.lockOrEnqueue("C7")
	m.Unlock("C7")        // frees C7, wakes w
	if !m.TryLock("C7") { // a newcomer barges in before w runs
		t.Fatal("TryLock of a freed key failed")
	}
	<-w.ready
	if m.wake("C7", w) {
		t.Fatal("the woken waiter took a key the newcomer holds")
	}
	m.mu.Lock()
	head := m.keys["C7"].head
	m.mu.Unlock()
	if head != w {
		t.Fatal("the waiter that lost is no longer first in the queue")
	}
	m.abandon("C7", behind)
	m.abandon("C7", w)
	m.Unlock("C7")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}
