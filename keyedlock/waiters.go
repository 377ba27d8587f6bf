// The waiters of a key: their queue, and the pool their records come from.

package keyedlock

import (
	"time"
)

// queue is a FIFO of waiters, linked through the waiters themselves.
type queue struct {
	head, tail *waiter
}

// waiter is one goroutine blocked in Lock. Its fields are guarded by
// Mutex.mu.
type waiter struct {
	prev, next *waiter // links of the key's queue

	// since is when the waiter joined the queue, for the starvation check.
	since time.Time

	// woken is set when a wake-up token is sent on ready, and cleared when
	// the waiter takes it. At most one token is ever on its way.
	woken bool

	// starving is set by the waiter itself when it lost the race for a
	// freed key after waiting longer than starvationThreshold. Unlock then
	// hands it the key directly instead of freeing it.
	starving bool

	// granted is set when Unlock handed the key to this waiter. From then
	// on the waiter owns the key, whether or not it is running yet, and
	// whether or not its context has ended.
	granted bool

	// ready carries the wake-up tokens. Its buffer of one means the waking
	// Unlock never blocks.
	ready chan struct{}
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
