package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
)

// gatedWriter records each Write it gets; while gate is open (not nil and
// not closed) every Write waits for it.
type gatedWriter struct {
	gate    chan struct{}
	entered chan struct{} // gets a value when a Write starts waiting at the gate

	mu     sync.Mutex // protects writes
	writes []string
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	if g.gate != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		<-g.gate
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes = append(g.writes, string(p))
	return len(p), nil
}

func (g *gatedWriter) snapshot() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.writes...)
}

// TestLogWriterBatches: lines logged while a write is under way go out
// together in the next one, all of them and in order. Written one at a
// time (a system call per request line), there would be a write per line.
func TestLogWriterBatches(t *testing.T) {
	w := &gatedWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	l := newLogWriter(w)
	var once sync.Once
	open := func() { once.Do(func() { close(w.gate) }) }
	t.Cleanup(open) // whatever happens, no goroutine stays stuck at the gate

	var want strings.Builder
	for i := 0; i <= 100; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		fmt.Fprintf(l, "line 0\n")
		<-w.entered // the first line's write is under way, and stuck
		for i := 1; i <= 100; i++ {
			fmt.Fprintf(l, "line %d\n", i)
		}
	}()
	select {
	case <-logged:
	case <-time.After(5 * time.Second):
		t.Fatal("logging waited for a write under way; want a line queued and Write to return at once")
	}
	open()
	l.close()
	got := w.snapshot()
	if len(got) > 2 {
		t.Errorf("101 lines took %d writes; want 2: the first line, then the 100 that gathered behind it", len(got))
	}
	if all := strings.Join(got, ""); all != want.String() {
		t.Errorf("written:\n%s\nwant:\n%s", all, want.String())
	}
}

// TestLogWriterIdleLineGoesOut: on an idle writer a line is written at
// once, without waiting for more lines, a timer or close.
func TestLogWriterIdleLineGoesOut(t *testing.T) {
	w := &gatedWriter{}
	l := newLogWriter(w)
	t.Cleanup(l.close)
	fmt.Fprintf(l, "alone\n")
	wait.For(t, 10*time.Second, "a line on an idle writer is written", func() bool { return len(w.snapshot()) > 0 })
	if got := w.snapshot(); len(got) != 1 || got[0] != "alone\n" {
		t.Errorf("written %q, want one write of %q", got, "alone\n")
	}
}

// TestLogWriterFullBufferBlocks: a writer that does not take lines slows
// the logging goroutines down instead of gathering without bound.
func TestLogWriterFullBufferBlocks(t *testing.T) {
	w := &gatedWriter{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	l := newLogWriter(w)
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	_, _ = l.Write(line)
	wait.Recv(t, w.entered, 10*time.Second, "the writer takes the first line")
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		for range maxPending/len(line) + 1 {
			_, _ = l.Write(line)
		}
	}()
	select {
	case <-returned:
		t.Fatalf("wrote %d bytes more while the writer was stuck; want Write to block at %d", maxPending+len(line), maxPending)
	case <-time.After(200 * time.Millisecond):
	}
	close(w.gate)
	wait.Recv(t, returned, 10*time.Second, "the blocked Writes return once the writer takes lines again")
	l.close()
	total := 0
	for _, s := range w.snapshot() {
		total += len(s)
	}
	if want := (maxPending/len(line) + 2) * len(line); total != want {
		t.Errorf("written %d bytes, want %d", total, want)
	}
}

// TestLogWriterAfterClose: lines logged after close (the server's last
// words) are written directly, after everything logged before.
func TestLogWriterAfterClose(t *testing.T) {
	w := &gatedWriter{}
	l := newLogWriter(w)
	fmt.Fprintf(l, "before\n")
	l.close()
	fmt.Fprintf(l, "after\n")
	l.close() // a second close does nothing
	if got := strings.Join(w.snapshot(), ""); got != "before\nafter\n" {
		t.Errorf("written %q, want %q", got, "before\nafter\n")
	}
}
