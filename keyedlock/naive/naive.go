// Package naive is a TEACHING EXAMPLE OF A BROKEN KEYED MUTEX. It is never
// used by the service; use package keyedlock instead.
//
// It is the keyed mutex most of us write first: a map from key to
// *sync.Mutex, guarded by a mutex of its own, whose entry is deleted on
// Unlock so that the map does not grow for ever. It looks right and passes
// casual tests, but it lets two goroutines hold one key:
//
//  1. A holds key k.
//  2. B calls Lock(k): it fetches A's *sync.Mutex from the map and blocks
//     on it (outside the map's mutex, as it must, or nobody else could
//     lock any key meanwhile).
//  3. A calls Unlock(k): it deletes the map entry and unlocks the mutex.
//     B now holds the old mutex.
//  4. C calls Lock(k): it finds no entry, creates a new mutex and holds
//     it. B and C both hold k.
//
// The entry was deleted while B still referred to it. The cure is to count
// references (holder and waiters) and delete only when the count drops to
// zero, which is what package keyedlock does. The test of this package
// replays steps 1 to 4 and expects the violation.
package naive

import "sync"

// Mutex is the broken keyed mutex described in the package comment. The
// zero value is ready to use.
type Mutex struct {
	// mu guards locks, but not the *sync.Mutex values once they are out of
	// the map: that gap is the bug.
	mu    sync.Mutex
	locks map[string]*sync.Mutex

	// beforeWait, if set, is called by Lock after it has fetched a key's
	// mutex and before it blocks on it: the moment step 2 describes. Tests
	// use it to replay the bug deterministically.
	beforeWait func(key string)
}

// Lock locks key.
func (m *Mutex) Lock(key string) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = make(map[string]*sync.Mutex)
	}
	l, ok := m.locks[key]
	if !ok {
		l = new(sync.Mutex)
		m.locks[key] = l
	}
	m.mu.Unlock()

	if m.beforeWait != nil {
		m.beforeWait(key)
	}
	l.Lock()
}

// Unlock unlocks key and forgets it, even if someone waits for it: the bug.
func (m *Mutex) Unlock(key string) {
	m.mu.Lock()
	l := m.locks[key]
	delete(m.locks, key)
	m.mu.Unlock()
	l.Unlock()
}
