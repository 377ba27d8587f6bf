package distlock

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// watchdog keeps the leases of every lock that one Redis locker holds. It
// is one goroutine and one timer for all of them, however many there are:
// a heap orders the held locks by the time the watchdog must next look at
// each, and the timer is set for the first of those times. When a lock is
// due, the watchdog either renews it, or, if its lease's deadline has
// passed without a successful renewal, declares it lost.
//
// A renewal is a round trip to Redis, which can hang on a dead connection.
// It therefore runs in a goroutine of its own, owned by the watchdog, while
// the lock stays in the heap with its deadline as its due time: a renewal
// that hangs cannot delay the loss, nor the renewals of other locks.
//
// Taking and releasing a lock costs a heap push and a heap removal under
// mu, and no goroutine wake-up: a lock taken now is due RenewEvery from
// now, after every lock already held, so the timer rarely needs moving.
//
// The goroutine starts with the first held lock and stops in close, which
// waits for it and for every renewal in flight.
type watchdog struct {
	r      *Redis
	ctx    context.Context    // for renewals; ended by close
	cancel context.CancelFunc // ends ctx

	// mu protects the fields below, and the watchdog fields of every lock
	// (index, due, renewAt, deadline, renewing, lastErr). A lock is in
	// locks exactly while it is held and not yet lost: register pushes it,
	// and Release, loss and close remove it. armedAt is the time timer
	// fires at, or zero when it is not armed; the timer is only set under
	// mu, so it never fires later than the first due lock.
	mu      sync.Mutex
	locks   lockHeap
	timer   *time.Timer // nil until the goroutine starts
	armedAt time.Time
	closed  bool
	done    chan struct{} // closed when the goroutine returns

	renewals sync.WaitGroup // renewals in flight
}

func newWatchdog(r *Redis) *watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	return &watchdog{r: r, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// register starts watching l, which was just acquired. A lock acquired
// after close is born lost: nobody would renew it or notice its expiry.
func (w *watchdog) register(l *redisLock) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		l.lose(fmt.Errorf("%w: the locker of %q was closed", ErrLost, l.keys))
		return
	}
	if w.timer == nil {
		w.timer = time.NewTimer(time.Hour)
		w.timer.Stop()
		go w.run()
	}
	if every := w.r.opts.RenewEvery; every > 0 {
		l.renewAt = time.Now().Add(every)
	}
	l.setDueLocked()
	heap.Push(&w.locks, l)
	w.armLocked(l.due)
	w.mu.Unlock()
}

// unregister stops watching l, for Release, and returns a channel that is
// closed when l's renewal in flight, if any, has ended.
func (w *watchdog) unregister(l *redisLock) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l.index >= 0 {
		heap.Remove(&w.locks, l.index)
	}
	return l.renewing // nil if none: a receive then blocks, so test for nil
}

// extend records that l's lease is valid until end, if that is later than
// what was known.
func (w *watchdog) extend(l *redisLock, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if end.After(l.deadline) {
		l.deadline = end
		w.fixLocked(l)
	}
}

// fixLocked restores l's place in the heap after its times changed. w.mu
// must be held.
func (w *watchdog) fixLocked(l *redisLock) {
	if l.index < 0 {
		return // released or lost
	}
	l.setDueLocked()
	heap.Fix(&w.locks, l.index)
	w.armLocked(l.due)
}

// armLocked makes sure the timer fires no later than at. w.mu must be held.
func (w *watchdog) armLocked(at time.Time) {
	if w.armedAt.IsZero() || at.Before(w.armedAt) {
		w.armedAt = at
		w.timer.Reset(time.Until(at))
	}
}

// run is the watchdog's goroutine: it sleeps until the first lock is due,
// deals with every lock that is due, and sleeps again.
func (w *watchdog) run() {
	defer close(w.done)
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.timer.C:
		}
		w.mu.Lock()
		w.armedAt = time.Time{}
		now := time.Now()
		var lost []lostLock
		for len(w.locks) > 0 && !w.locks[0].due.After(now) {
			l := w.locks[0]
			if !now.Before(l.deadline) {
				heap.Pop(&w.locks)
				lost = append(lost, lostLock{l, l.expiryCauseLocked()})
				continue
			}
			// Renewal due: while it is in flight the lock is due at its
			// deadline only.
			l.renewing = make(chan struct{})
			l.setDueLocked()
			heap.Fix(&w.locks, 0)
			w.renewals.Go(func() { w.renew(l) })
		}
		if len(w.locks) > 0 {
			w.armLocked(w.locks[0].due)
		}
		w.mu.Unlock()

		// Declared outside mu: lose takes the lock's own mutex, which is
		// never held while mu is taken; and the observer is never called
		// under a lock.
		for _, x := range lost {
			x.lock.lose(x.cause)
			if obs := w.r.opts.Observer; obs != nil {
				obs.Lost()
			}
		}
	}
}

// lostLock is a lock whose lease ran out, and why.
type lostLock struct {
	lock  *redisLock
	cause error
}

// renew extends l's lease, then schedules its next renewal: RenewEvery
// later, or sooner after a failed renewal (a network error, say), which is
// no loss by itself while the lease is still valid. A renewal that finds a
// key gone or taken declares the loss (in refresh).
func (w *watchdog) renew(l *redisLock) {
	err := l.refresh(w.ctx)

	w.mu.Lock()
	every := w.r.opts.RenewEvery
	switch {
	case err == nil:
		l.lastErr = nil
	case errors.Is(err, ErrNotHeld):
		// Lost: refresh removed l from the heap.
	default:
		l.lastErr = err
		every = max(every/4, time.Millisecond)
	}
	done := l.renewing
	l.renewing = nil
	l.renewAt = time.Now().Add(every)
	w.fixLocked(l)
	w.mu.Unlock()
	close(done) // a Release waiting for this renewal may go on

	// A loss was reported by forget; a renewal that close cut short is no
	// news.
	if obs := w.r.opts.Observer; obs != nil && !errors.Is(err, ErrNotHeld) && w.ctx.Err() == nil {
		obs.Renewed(err)
	}
}

// forget removes l from the heap, if it is there, because it was lost, and
// then tells the observer. A lock leaves the heap once, under mu, so a loss
// is reported once even when an expiry and a renewal find it together; a
// lock that was released, expired or dropped by close before is no longer
// in the heap and is not reported again.
func (w *watchdog) forget(l *redisLock) {
	w.mu.Lock()
	watched := l.index >= 0
	if watched {
		heap.Remove(&w.locks, l.index)
	}
	w.mu.Unlock()
	if obs := w.r.opts.Observer; watched && obs != nil {
		obs.Lost()
	}
}

// close stops the goroutine and waits for it and for every renewal in
// flight. Locks still held are declared lost: nobody renews them any more.
func (w *watchdog) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	held := w.locks
	w.locks = nil
	for _, l := range held {
		l.index = -1
	}
	started := w.timer != nil
	w.mu.Unlock()

	w.cancel() // stops run, and renewals blocked in Redis
	if started {
		<-w.done
	}
	w.renewals.Wait()
	for _, l := range held {
		l.lose(fmt.Errorf("%w: the locker of %q was closed", ErrLost, l.keys))
	}
}

// lockHeap orders locks by due time, for container/heap. Each lock keeps
// its position in index, so that Release removes it in O(log n).
type lockHeap []*redisLock

func (h lockHeap) Len() int           { return len(h) }
func (h lockHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h lockHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *lockHeap) Push(x any) {
	l := x.(*redisLock)
	l.index = len(*h)
	*h = append(*h, l)
}

func (h *lockHeap) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil // let the lock be collected
	l.index = -1
	*h = old[:len(old)-1]
	return l
}
