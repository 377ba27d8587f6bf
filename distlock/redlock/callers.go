package redlock

import "sync"

// maxIdleCallers is how many idle goroutines a Locker keeps for its
// fan-outs. A fan-out to N nodes takes N-1 of them for as long as its
// slowest call lasts, so this covers 64 concurrent Obtains or Releases on
// three nodes; beyond it, a goroutine that finishes a call ends.
const maxIdleCallers = 128

// callers runs fanOut's calls to the nodes on goroutines kept from one
// fan-out to the next. The go-redis call path needs a stack of several
// kilobytes: a goroutine started for each call begins with the smallest
// stack and grows it, copying it, on every call; one that is reused keeps
// the stack it grew. (docs/benchmarks.md, "Redlock at 1 goroutine",
// profiles what that growing costs.)
//
// The goroutines belong to the Locker: close ends the idle ones and waits
// for the busy ones to finish their call. After close, every call gets a
// goroutine of its own, which fanOut waits for, as it would without the
// pool.
type callers struct {
	// mu protects the fields below. Invariant: a channel in idle has exactly
	// one goroutine that receives from it next, and nobody sends on it
	// while it is in idle; run takes a channel out of idle before it sends
	// its one call, and close closes only the channels it took out of idle.
	mu     sync.Mutex
	idle   []chan func() // the idle goroutines' channels, the most recently idle last
	closed bool

	running sync.WaitGroup // the pool's goroutines; close waits for them
}

// run runs call on a goroutine of the pool, an idle one if there is one.
// It does not wait for call to return.
func (p *callers) run(call func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		next := p.idle[n-1] // the most recently idle: its stack is the most likely in cache
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		next <- call
		return
	}
	if p.closed {
		p.mu.Unlock()
		go call() // fanOut waits for it
		return
	}
	p.running.Add(1)
	p.mu.Unlock()
	go p.work(make(chan func()), call)
}

// work runs call, then every call sent on next, until the pool has idle
// goroutines enough or is closed.
func (p *callers) work(next chan func(), call func()) {
	defer p.running.Done()
	for call != nil {
		call()
		p.mu.Lock()
		if p.closed || len(p.idle) >= maxIdleCallers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, next)
		p.mu.Unlock()
		call = <-next // nil once close closed next
	}
}

// close ends the idle goroutines, and waits for the busy ones to finish
// their calls and end.
func (p *callers) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, next := range idle {
		close(next)
	}
	p.running.Wait()
}
