package keyedlock

import (
	"context"
	"testing"
	"time"
)

// These tests drive the moment where Unlock hands a key to a waiter whose
// context ends at the same instant, deterministically: they queue a waiter
// by hand, grant it with Unlock, and then take the path Lock takes when its
// select picks ctx.Done() over the token.

func TestAbandonAfterGrantPassesKeyToNextWaiter(t *testing.T) {
	var m Mutex
	if !m.TryLock("C7") {
		t.Fatal("TryLock on a fresh Mutex failed")
	}
	w := m.lockOrEnqueue("C7") // the waiter whose context will end
	if w == nil {
		t.Fatal("lockOrEnqueue took a held key")
	}
	next := make(chan error, 1)
	go func() { next <- m.Lock(context.Background(), "C7") }()
	for m.Waiting("C7") != 2 {
		time.Sleep(time.Millisecond)
	}

	m.Unlock("C7") // hands C7 to w
	m.abandon("C7", w)

	select {
	case err := <-next:
		if err != nil {
			t.Fatalf("next waiter: Lock = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned key was dropped: the next waiter never got it")
	}
	m.Unlock("C7")
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d after everyone left, want 0", n)
	}
}

func TestAbandonAfterGrantWithNoOtherWaiterFreesKey(t *testing.T) {
	var m Mutex
	m.TryLock("C7")
	w := m.lockOrEnqueue("C7")
	m.Unlock("C7")
	m.abandon("C7", w)
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0: the abandoned key was kept", n)
	}
	if !m.TryLock("C7") {
		t.Fatal("C7 still locked after its only waiter abandoned it")
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
