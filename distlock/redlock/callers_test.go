package redlock

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestCallersReuseGoroutines checks that a call finds the goroutine of the
// previous one idle and runs there, rather than on a goroutine of its own.
func TestCallersReuseGoroutines(t *testing.T) {
	var p callers
	t.Cleanup(p.close)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		p.run(wg.Done)
		wg.Wait()
		// The goroutine goes idle after its call returned: wait for it (10s:
		// a pool that never keeps one fails, rather than hang the test).
		for deadline := time.Now().Add(10 * time.Second); p.idleCount() == 0; runtime.Gosched() {
			if time.Now().After(deadline) {
				t.Fatal("no idle goroutine after a call returned")
			}
		}
		if n := p.idleCount(); n != 1 {
			t.Fatalf("%d idle goroutines after one call at a time, want 1", n)
		}
	}
}

// TestCallersCloseWaitsForBusyCalls checks that close returns only once
// the calls running on the pool's goroutines have returned, and that calls
// made after close still run.
func TestCallersCloseWaitsForBusyCalls(t *testing.T) {
	var p callers
	release := make(chan struct{})
	var returned bool // written by the call before it returns, read after close
	p.run(func() {
		<-release
		returned = true
	})
	closed := make(chan struct{})
	go func() {
		p.close()
		close(closed)
	}()
	for !p.isClosed() {
		runtime.Gosched()
	}
	close(release)
	<-closed
	if !returned { // and the race detector reports the unsynchronised read
		t.Fatal("close returned before the busy call did")
	}

	done := make(chan struct{})
	p.run(func() { close(done) })
	<-done
	if n := p.idleCount(); n != 0 {
		t.Fatalf("%d idle goroutines after close, want 0", n)
	}
}

func (p *callers) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func (p *callers) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}
