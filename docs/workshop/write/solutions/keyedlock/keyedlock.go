// Package keyedlock is a solution of the write-it-yourself keyed mutex lab
// (docs/workshop/03-keyed-lock.md): one lock per key, entries counted and
// deleted only when nobody holds or waits for them, waits that end with
// their context. The project's own keyedlock.Mutex is the same idea with a
// queue that hands a key to its oldest waiter.
package keyedlock

import (
	"context"
	"sync"
)

// Mutex is a set of locks, one per key. The zero value is ready to use.
type Mutex struct {
	// mu guards keys. It is held only to find, count and delete entries,
	// never while a goroutine waits for a key.
	mu   sync.Mutex
	keys map[string]*entry
}

// entry is the lock of one key. holding is a semaphore of one: whoever put
// the one value into it holds the key. refs counts the holder and the
// waiters; the entry leaves the map when refs drops to zero, so nobody
// can still be waiting on an entry that is gone (which is what lets two
// goroutines hold one key in the naive version).
type entry struct {
	holding chan struct{}
	refs    int // guarded by Mutex.mu
}

// Lock waits until it holds key, or until ctx ends: then it returns
// ctx.Err() and holds nothing.
func (m *Mutex) Lock(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e := m.acquire(key)
	select {
	case e.holding <- struct{}{}:
		return nil
	case <-ctx.Done():
		m.drop(key, e)
		return ctx.Err()
	}
}

// Unlock releases key, which the caller holds.
func (m *Mutex) Unlock(key string) {
	m.mu.Lock()
	e := m.keys[key]
	m.mu.Unlock()
	if e == nil {
		panic("keyedlock: Unlock of unlocked key " + key)
	}
	<-e.holding
	m.drop(key, e)
}

// Len returns the number of keys that have a holder or a waiter.
func (m *Mutex) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// acquire returns key's entry, made if there is none, counting the caller.
func (m *Mutex) acquire(key string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys == nil {
		m.keys = make(map[string]*entry)
	}
	e, ok := m.keys[key]
	if !ok {
		e = &entry{holding: make(chan struct{}, 1)}
		m.keys[key] = e
	}
	e.refs++
	return e
}

// drop uncounts the caller and deletes the entry once nobody uses it.
func (m *Mutex) drop(key string, e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.refs--; e.refs == 0 {
		delete(m.keys, key)
	}
}
