// Package watchdog keeps the leases of the locks one distlock locker
// holds: it renews each every so often, and declares it lost when its
// lease's deadline passes without a successful renewal. It is the one
// watchdog design of every lease-based backend (Redis, Redlock, Postgres).
//
// One goroutine and one timer serve every lock of a locker, however many
// there are: a heap orders the watched locks by the time the watchdog must
// next look at each, and the timer is set for the first of those times.
// Watching and unwatching a lock costs a heap push and a heap removal, and
// no timer of its own: most locks are released before their first renewal,
// and a lock taken now is due after every lock already held, so the timer
// rarely moves. The goroutine starts with the first watched lock and ends
// as soon as none is left, so a locker that holds nothing costs no
// goroutine.
//
// A renewal is a round trip that can hang on a dead connection. It runs in
// a goroutine of its own, bounded by the lease's deadline, while the lock
// stays in the heap with its deadline as its due time: a renewal that hangs
// delays neither the loss nor the renewals of other locks.
package watchdog

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Lease is a held lock as the watchdog sees it.
type Lease interface {
	// Renew extends the lease and records its new end with Extend. A
	// renewal that finds the lock gone declares the loss itself, which
	// calls Forget; any other error is no loss while the deadline lasts,
	// and the renewal is tried again sooner.
	Renew(ctx context.Context) error

	// Expire declares the lock lost because its deadline passed; last is
	// the last failed renewal's error, or nil when none had failed.
	Expire(last error)
}

// Entry is the watchdog's record of one lock, kept in the lock itself.
// Its fields are protected by the watchdog's mutex.
type Entry struct {
	lease    Lease
	watched  bool          // in the heap
	index    int           // position in the heap while watched
	due      time.Time     // when the watchdog must next look at the lock
	renewAt  time.Time     // when the next renewal is due; zero: no renewals
	deadline time.Time     // until when the lease is surely valid; zero: no deadline
	renewing chan struct{} // non-nil while a renewal is in flight; closed when it ends
	lastErr  error         // the last failed renewal's error, for Expire
}

// Options configure a Watchdog. OnRenewed and OnLost, when set, are called
// from its goroutines, never under its mutex.
type Options struct {
	Every     time.Duration // between renewals of a lock; 0 or less: none
	OnRenewed func(err error)
	OnLost    func() // once per lock lost while watched, by expiry or Forget
}

// Watchdog keeps the leases of one locker's locks; make one with New.
type Watchdog struct {
	opts   Options
	ctx    context.Context    // for renewals; ended by Close
	cancel context.CancelFunc // ends ctx

	// mu protects the fields below and every Entry. An entry is in locks
	// exactly while it is watched. armedAt is the time timer fires at, or
	// zero when it is not armed; the timer is only set under mu, so it
	// never fires later than the first due entry. running says whether the
	// goroutine runs; it is set by Watch and cleared by the goroutine when
	// locks is empty, both under mu, so at most one runs.
	mu      sync.Mutex
	locks   entryHeap
	timer   *time.Timer
	armedAt time.Time
	running bool
	closed  bool

	loops    sync.WaitGroup // the goroutine
	renewals sync.WaitGroup // renewals in flight
}

// New returns a watchdog with no lock watched and no goroutine running.
func New(opts Options) *Watchdog {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Watchdog{opts: opts, ctx: ctx, cancel: cancel, timer: time.NewTimer(time.Hour)}
	w.timer.Stop()
	return w
}

// Watch starts watching lease, acquired just now and valid until deadline
// (zero: no deadline), with e as its record. It returns false, and watches
// nothing, after Close: the caller then declares the lock lost.
func (w *Watchdog) Watch(e *Entry, lease Lease, deadline time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	e.lease, e.deadline = lease, deadline
	if w.opts.Every > 0 {
		e.renewAt = time.Now().Add(w.opts.Every)
	}
	e.setDue()
	heap.Push(&w.locks, e)
	if !w.running {
		w.running = true
		w.loops.Go(w.run)
	}
	w.arm(e.due)
	return true
}

// Unwatch stops watching e, for Release, and waits for its renewal in
// flight, if any.
func (w *Watchdog) Unwatch(e *Entry) {
	w.mu.Lock()
	w.remove(e)
	renewing := e.renewing
	w.mu.Unlock()
	if renewing != nil {
		<-renewing
	}
}

// Extend records that e's lease is valid until end, if that is later than
// what was known: a renewal's, or a Refresh's by the lock's holder.
func (w *Watchdog) Extend(e *Entry, end time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if end.After(e.deadline) {
		e.deadline = end
		w.fix(e)
	}
}

// Deadline returns when e's lock is declared lost unless renewed first.
func (w *Watchdog) Deadline(e *Entry) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.deadline
}

// Forget stops watching e because its lock was declared lost, and reports
// the loss to OnLost. An entry leaves the heap once, so a loss is reported
// once even when an expiry and a renewal find it together, and not at all
// for an entry unwatched before.
func (w *Watchdog) Forget(e *Entry) {
	w.mu.Lock()
	watched := e.watched
	w.remove(e)
	w.mu.Unlock()
	if watched && w.opts.OnLost != nil {
		w.opts.OnLost()
	}
}

// Close stops watching every lock, ends the goroutine and the renewals in
// flight and waits for them, and returns the leases that were still
// watched: nobody renews them any more, so the caller declares them lost.
// Watch returns false after Close.
func (w *Watchdog) Close() []Lease {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	var held []Lease
	for _, e := range w.locks {
		e.watched = false
		held = append(held, e.lease)
	}
	w.locks = nil
	w.timer.Reset(0) // the goroutine wakes, finds nothing and returns
	w.mu.Unlock()

	w.cancel() // ends renewals blocked in I/O
	w.loops.Wait()
	w.renewals.Wait()
	return held
}

// remove takes e out of the heap if it is there, and wakes the goroutine
// when no lock is left, so that it returns now. w.mu must be held.
func (w *Watchdog) remove(e *Entry) {
	if !e.watched {
		return
	}
	heap.Remove(&w.locks, e.index)
	if len(w.locks) == 0 && w.running {
		w.armedAt = time.Now()
		w.timer.Reset(0)
	}
}

// fix restores e's place in the heap after its times changed. w.mu must be
// held.
func (w *Watchdog) fix(e *Entry) {
	if !e.watched {
		return // unwatched or lost
	}
	e.setDue()
	heap.Fix(&w.locks, e.index)
	w.arm(e.due)
}

// arm makes sure the timer fires no later than at. w.mu must be held.
func (w *Watchdog) arm(at time.Time) {
	if w.armedAt.IsZero() || at.Before(w.armedAt) {
		w.armedAt = at
		w.timer.Reset(time.Until(at))
	}
}

// run is the watchdog's goroutine: it sleeps until the first lock is due,
// renews or expires every lock that is due, and sleeps again; it returns
// when no lock is left to watch.
func (w *Watchdog) run() {
	for {
		<-w.timer.C
		w.mu.Lock()
		w.armedAt = time.Time{}
		now := time.Now()
		var expired []*Entry
		for len(w.locks) > 0 && !w.locks[0].due.After(now) {
			e := w.locks[0]
			if !e.deadline.IsZero() && !now.Before(e.deadline) {
				heap.Pop(&w.locks)
				expired = append(expired, e)
				continue
			}
			// Renewal due: while it is in flight the lock is due at its
			// deadline only.
			e.renewing = make(chan struct{})
			e.setDue()
			heap.Fix(&w.locks, 0)
			w.renewals.Go(func() { w.renew(e) })
		}
		stop := len(w.locks) == 0
		if stop {
			w.running = false
		} else {
			w.arm(w.locks[0].due)
		}
		w.mu.Unlock()

		// Declared outside mu: Expire takes the lock's own mutex, and
		// OnLost is never called under a lock. lastErr is read here
		// without mu: the entry left the heap, so nothing writes it.
		for _, e := range expired {
			e.lease.Expire(e.lastErr)
			if w.opts.OnLost != nil {
				w.opts.OnLost()
			}
		}
		if stop {
			return
		}
	}
}

// renew extends e's lease, then schedules its next renewal: Every later,
// or sooner after a failed renewal. The renewal's context ends at the
// lease's deadline (or Every from now without one), when it could no
// longer help.
func (w *Watchdog) renew(e *Entry) {
	w.mu.Lock()
	end := e.deadline
	w.mu.Unlock()
	if end.IsZero() {
		end = time.Now().Add(max(w.opts.Every, time.Second))
	}
	ctx, cancel := context.WithDeadline(w.ctx, end)
	err := e.lease.Renew(ctx)
	cancel()

	w.mu.Lock()
	lost := !e.watched // forgotten by the lease, unwatched, or closed
	every := w.opts.Every
	if err == nil {
		e.lastErr = nil
	} else {
		e.lastErr = err
		every = max(every/4, time.Millisecond)
	}
	done := e.renewing
	e.renewing = nil
	e.renewAt = time.Now().Add(every)
	w.fix(e)
	w.mu.Unlock()
	close(done) // an Unwatch waiting for this renewal may go on

	if obs := w.opts.OnRenewed; obs != nil && !lost && w.ctx.Err() == nil {
		obs(err)
	}
}
