package keyedlock

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// starvationThreshold is how long a waiter may lose the race for a freed
// key to goroutines that arrive later before Unlock starts handing the key
// straight to it. sync.Mutex uses the same figure.
const starvationThreshold = time.Millisecond

// Mutex is a set of mutual-exclusion locks, one per key. A key's lock is
// created when the key is first locked and removed when its last holder or
// waiter leaves, so a Mutex holds memory only for keys in use.
//
// Keys never share a lock: a goroutine waiting for one key never waits for
// the holder of another. Waiters for one key are woken in arrival order,
// but a goroutine that locks a key at the instant it is freed may take it
// before the woken waiter runs. No waiter starves: one that has been kept
// waiting for over a millisecond is handed the key by the next Unlock (see
// the package documentation on fairness).
//
// The zero value is an unlocked Mutex ready to use. A Mutex must not be
// copied after first use.
type Mutex struct {
	// mu guards keys, and the fields of every queued waiter. It is held
	// only for a few map operations, never while a key is held or waited
	// for: that is why two keys never wait for each other's holders, even
	// though they share mu for a few nanoseconds.
	mu sync.Mutex

	// keys has an entry for exactly the keys that have a holder or a
	// waiter: the entry is the key's reference count in disguise. Whenever
	// mu is free: an entry that is not held has waiters, and the first of
	// them has been woken to take the key (it holds a wake-up token, or is
	// on its way to mu with one).
	keys map[string]entry

	// waiters recycles waiter records, so a contended Lock does not
	// allocate either. Get returns nil when it is empty (no New func).
	waiters sync.Pool
}

// entry is the state of one key in use. It is stored by value in the map,
// so locking a free key allocates nothing.
type entry struct {
	held  bool // a goroutine owns the key
	queue      // the goroutines waiting for it, oldest first
}

// Lock waits until it holds key, or until ctx ends.
//
// It returns nil once key is held; the caller must call Unlock(key) when
// done. If ctx ends first (or had ended already) it returns ctx.Err(), and
// then holds nothing and leaves nothing behind: the waiter leaves the
// queue, and if the key had been handed to it at that very moment, it
// hands it on as Unlock would.
func (m *Mutex) Lock(ctx context.Context, key string) error {
	done := ctx.Done()
	select {
	case <-done:
		return ctx.Err() // a context that has ended never acquires
	default:
	}

	w := m.lockOrEnqueue(key)
	if w == nil {
		return nil
	}
	for {
		if done == nil { // a context that never ends: a plain receive is cheaper than select
			<-w.ready
		} else {
			select {
			case <-w.ready:
			case <-done:
				m.abandon(key, w)
				return ctx.Err()
			}
		}
		if m.wake(key, w) {
			return nil
		}
	}
}

// TryLock takes key if nobody holds it and reports whether it did. It
// never waits. Like Lock, it may take a key that was just freed while the
// waiter woken for it is still on its way.
func (m *Mutex) TryLock(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.keys[key]
	if e.held {
		return false
	}
	m.takeLocked(key, e)
	return true
}

// Unlock releases key. If goroutines wait for it, the oldest of them is
// woken to take it; if that one has waited too long already, it holds the
// key when Unlock returns, and nobody else can take it in between.
//
// As with sync.Mutex, a locked key is not tied to a goroutine: one may lock
// it and another unlock it. Unlock panics if key is not locked.
func (m *Mutex) Unlock(key string) {
	m.mu.Lock()
	e := m.keys[key]
	if !e.held {
		m.mu.Unlock() // leave m usable for whoever recovers the panic
		panic("keyedlock: unlock of unlocked key " + strconv.Quote(key))
	}
	m.releaseLocked(key, e)
	m.mu.Unlock()
}

// LockAll takes every key, or none. It removes duplicates and takes the
// keys in sorted order, whatever order they are given in: because every
// caller takes any two keys in the same order, two calls with overlapping
// keys can never each hold a key the other waits for, so they never
// deadlock.
//
// On success it returns a function that unlocks every key; calling it more
// than once does nothing more. If ctx ends before every key is held, LockAll
// unlocks the keys it took and returns ctx.Err() and a nil function.
func (m *Mutex) LockAll(ctx context.Context, keys ...string) (unlock func(), err error) {
	sorted := slices.Clone(keys) // the caller's slice keeps its order
	slices.Sort(sorted)
	sorted = slices.Compact(sorted) // locking a key twice would wait forever
	for i, key := range sorted {
		if err := m.Lock(ctx, key); err != nil {
			m.unlockAll(sorted[:i])
			return nil, err
		}
	}
	var once sync.Once
	return func() { once.Do(func() { m.unlockAll(sorted) }) }, nil
}

// Do runs fn while holding key and returns its error. It returns ctx.Err()
// without running fn if ctx ends before key is held. key is unlocked when
// fn returns, or panics.
func (m *Mutex) Do(ctx context.Context, key string, fn func() error) error {
	if err := m.Lock(ctx, key); err != nil {
		return err
	}
	defer m.Unlock(key)
	return fn()
}

// Len returns the number of keys that have a holder or a waiter. It is zero
// when nothing is locked, which makes it useful for leak tests and as a
// gauge.
func (m *Mutex) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.keys)
}

// lockOrEnqueue takes key if nobody holds it and returns nil. Otherwise it
// queues a waiter for key and returns it, for Lock to wait on.
func (m *Mutex) lockOrEnqueue(key string) *waiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.keys[key]
	if !e.held {
		m.takeLocked(key, e)
		return nil
	}
	w := m.getWaiter()
	w.since = time.Now()
	e.push(w)
	m.keys[key] = e
	return w
}

// wake is what waiter w does with a wake-up token: it holds key if it was
// handed over, or takes key if it is still free. Otherwise a later
// goroutine took it first; w stays at the front of the queue and, if it
// has been kept waiting too long, asks to be handed the key next time. It
// reports whether w holds key.
func (m *Mutex) wake(key string, w *waiter) bool {
	m.mu.Lock()
	w.woken = false
	if w.granted {
		m.mu.Unlock()
		m.putWaiter(w)
		return true
	}
	e := m.keys[key] // present: w is in its queue
	if !e.held {
		e.held = true
		e.remove(w)
		m.keys[key] = e
		m.mu.Unlock()
		m.putWaiter(w)
		return true
	}
	if time.Since(w.since) > starvationThreshold {
		w.starving = true
	}
	m.mu.Unlock()
	return false
}

// takeLocked makes the caller the holder of key, whose entry e is not held:
// a new entry, or one whose waiters were woken to take the key but have
// not run yet. m.mu must be held.
func (m *Mutex) takeLocked(key string, e entry) {
	if m.keys == nil {
		m.keys = make(map[string]entry)
	}
	e.held = true
	m.keys[key] = e
}

// releaseLocked ends the current holder's ownership of key, whose entry is
// e. With nobody waiting, key is forgotten. Otherwise the oldest waiter is
// handed key if it is starving, or else key is freed and that waiter woken
// to take it; a goroutine that locks key before the waiter runs may take
// it first ("barging"), which is what keeps a busy key cheap. m.mu must be
// held.
func (m *Mutex) releaseLocked(key string, e entry) {
	w := e.head
	switch {
	case w == nil:
		delete(m.keys, key) // the last reference is gone
		return
	case w.starving:
		e.remove(w)
		w.granted = true // e stays held: it changes hands here
	default:
		e.held = false
	}
	m.keys[key] = e
	m.signalLocked(w)
}

// signalLocked sends w a wake-up token, unless one is on its way already.
// m.mu must be held.
func (m *Mutex) signalLocked(w *waiter) {
	if !w.woken {
		w.woken = true
		w.ready <- struct{}{} // never blocks: the buffer is empty until now
	}
}

// abandon takes w, whose context ended, out of key's queue. If Unlock
// handed key to w at the same instant, w owns key and must release it like
// any holder: dropping it would leave the key locked for ever, with its
// remaining waiters stuck behind nobody. If key is free and w was the
// waiter woken to take it, the wake-up passes to the next waiter.
func (m *Mutex) abandon(key string, w *waiter) {
	m.mu.Lock()
	if w.woken {
		<-w.ready // take the token that was sent, so w can be reused
		w.woken = false
	}
	e := m.keys[key] // present: w either waits for key or holds it
	switch {
	case w.granted:
		m.releaseLocked(key, e)
	default:
		e.remove(w)
		switch {
		case e.held:
			m.keys[key] = e
		case e.head != nil:
			m.keys[key] = e
			m.signalLocked(e.head)
		default:
			delete(m.keys, key) // free, and w was its last waiter
		}
	}
	m.mu.Unlock()
	m.putWaiter(w)
}

// unlockAll unlocks keys in reverse order.
func (m *Mutex) unlockAll(keys []string) {
	for i := len(keys) - 1; i >= 0; i-- {
		m.Unlock(keys[i])
	}
}
