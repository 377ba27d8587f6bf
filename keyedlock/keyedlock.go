package keyedlock

import (
	"context"
	"slices"
	"strconv"
	"sync"
)

// Mutex is a set of mutual-exclusion locks, one per key. A key's lock is
// created when the key is first locked and removed when its last holder or
// waiter leaves, so a Mutex holds memory only for keys in use.
//
// Keys never share a lock: a goroutine waiting for one key never waits for
// the holder of another. Waiters for one key are served in arrival order.
//
// The zero value is an unlocked Mutex ready to use. A Mutex must not be
// copied after first use.
type Mutex struct {
	// mu guards keys and, for every queued waiter, its links and its
	// granted flag. It is held only for a few map operations, never while a
	// key is held or waited for: that is why two keys never wait for each
	// other's holders, even though they share mu for a few nanoseconds.
	mu sync.Mutex

	// keys has an entry for exactly the keys that have a holder. The entry
	// is the key's reference count in disguise: one holder plus the
	// goroutines in its queue. Invariant, whenever mu is free: the entry
	// exists if and only if exactly one goroutine owns the key (perhaps a
	// waiter that has been handed the key and is not running yet).
	keys map[string]queue

	// waiters recycles waiter records, so a contended Lock does not
	// allocate either. Get returns nil when it is empty (no New func).
	waiters sync.Pool
}

// queue is the FIFO of goroutines waiting for one held key, oldest first.
// It is stored by value in the map, so locking a free key allocates nothing.
type queue struct {
	head, tail *waiter
}

// waiter is one goroutine blocked in Lock.
type waiter struct {
	// prev and next link the key's queue; guarded by Mutex.mu.
	prev, next *waiter

	// granted is set, under Mutex.mu, when Unlock hands the key to this
	// waiter. From that moment the waiter owns the key, whether or not it
	// is running yet, and whether or not its context has ended.
	granted bool

	// ready receives exactly one token when granted is set. Its buffer of
	// one means the handing-over Unlock never blocks.
	ready chan struct{}
}

// Lock waits until it holds key, or until ctx ends.
//
// It returns nil once key is held; the caller must call Unlock(key) when
// done. If ctx ends first (or had ended already) it returns ctx.Err(), and
// then holds nothing and leaves nothing behind: the waiter leaves the
// queue, or, if the key was handed to it at the same moment, hands it on to
// the next waiter.
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
	if done == nil { // a context that never ends: a plain receive is cheaper than select
		<-w.ready
		m.putWaiter(w)
		return nil
	}
	select {
	case <-w.ready:
		m.putWaiter(w)
		return nil
	case <-done:
		m.abandon(key, w)
		return ctx.Err()
	}
}

// TryLock takes key if it is free and reports whether it did. It never
// waits, and never jumps the queue: a key with a holder is not free, however
// soon it will be handed on.
func (m *Mutex) TryLock(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, held := m.keys[key]; held {
		return false
	}
	m.lockFreeLocked(key)
	return true
}

// Unlock releases key. If goroutines wait for it, the oldest of them holds
// it when Unlock returns; nobody else can take it in between.
//
// As with sync.Mutex, a locked key is not tied to a goroutine: one may lock
// it and another unlock it. Unlock panics if key is not locked.
func (m *Mutex) Unlock(key string) {
	m.mu.Lock()
	q, held := m.keys[key]
	if !held {
		m.mu.Unlock() // leave m usable for whoever recovers the panic
		panic("keyedlock: unlock of unlocked key " + strconv.Quote(key))
	}
	m.releaseLocked(key, q)
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

// lockOrEnqueue takes key if it is free and returns nil. Otherwise it
// queues a waiter for key and returns it; the waiter owns key once a token
// arrives on its ready channel.
func (m *Mutex) lockOrEnqueue(key string) *waiter {
	m.mu.Lock()
	defer m.mu.Unlock()
	q, held := m.keys[key]
	if !held {
		m.lockFreeLocked(key)
		return nil
	}
	w := m.getWaiter()
	q.push(w)
	m.keys[key] = q
	return w
}

// lockFreeLocked makes the caller the holder of a key that has none.
// m.mu must be held.
func (m *Mutex) lockFreeLocked(key string) {
	if m.keys == nil {
		m.keys = make(map[string]queue)
	}
	m.keys[key] = queue{}
}

// releaseLocked ends the current holder's ownership of key, whose entry is
// q: it hands key to the oldest waiter, or forgets key when nobody waits.
// Handing over directly, rather than letting waiters race for a free key,
// is what makes the order FIFO and keeps the entry alive while anyone
// waits. m.mu must be held.
func (m *Mutex) releaseLocked(key string, q queue) {
	w := q.pop()
	if w == nil {
		delete(m.keys, key) // the last reference is gone
		return
	}
	m.keys[key] = q
	w.granted = true
	w.ready <- struct{}{} // never blocks: the buffer is empty until now
}

// abandon takes w, whose context ended, out of key's queue. If Unlock
// handed key to w at the same instant, w owns key and must pass it on like
// any holder: dropping it would leave the key locked for ever, with its
// remaining waiters stuck behind nobody.
func (m *Mutex) abandon(key string, w *waiter) {
	m.mu.Lock()
	q := m.keys[key] // present: w either waits behind a holder or is one
	if w.granted {
		<-w.ready // take the token Unlock sent, so w can be reused
		m.releaseLocked(key, q)
	} else {
		q.remove(w)
		m.keys[key] = q
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

func (m *Mutex) getWaiter() *waiter {
	if w, ok := m.waiters.Get().(*waiter); ok {
		return w
	}
	return &waiter{ready: make(chan struct{}, 1)}
}

// putWaiter recycles w, which is out of every queue and whose ready
// channel is empty.
func (m *Mutex) putWaiter(w *waiter) {
	*w = waiter{ready: w.ready}
	m.waiters.Put(w)
}

// push appends w to the back of q.
func (q *queue) push(w *waiter) {
	w.prev = q.tail
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

// pop removes and returns the front of q, or nil if q is empty.
func (q *queue) pop() *waiter {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

// remove unlinks w, which is in q, from wherever it stands.
func (q *queue) remove(w *waiter) {
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
}
