package main

import (
	"io"
	"sync"
)

// logWriter writes the log's lines to w in batches: a line is appended to a
// buffer, and one goroutine writes whatever has gathered in one write
// system call. The server logs a line per request; written one at a time
// that is a system call per request, several microseconds of CPU. Under
// load the lines that arrive while one batch is being written go out
// together in the next (the way group commit shares a COMMIT), and on an
// idle server a line goes out at once: no timer holds it back.
//
// A line is in no batch for longer than one write takes. A buffer that
// reaches maxPending (w stuck, say a full pipe) is written by the caller
// itself, so that a stalled w slows the logging goroutines down, as a
// direct write would, instead of growing the buffer without bound.
type logWriter struct {
	w    io.Writer
	wake chan struct{} // capacity 1: a batch is waiting to be written
	done chan struct{} // closed when the writing goroutine has returned

	// writing serializes the writes to w, so that batches go out in the
	// order in which their lines came; it is taken before mu.
	writing sync.Mutex

	spare []byte // the buffer of the last batch, for the next; guarded by writing

	mu      sync.Mutex // protects pending and closed
	pending []byte     // lines not yet handed to w
	closed  bool       // after close, Write writes through
}

// maxPending is how much a logWriter gathers before the logging goroutine
// writes it itself.
const maxPending = 256 << 10

// newLogWriter starts the goroutine that writes to w; close stops it.
func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.run()
	return l
}

// Write queues p, a whole line from slog's handler (which calls Write once
// per record), and returns at once.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.writing.Lock()
		defer l.writing.Unlock()
		return l.w.Write(p)
	}
	l.pending = append(l.pending, p...)
	full := len(l.pending) >= maxPending
	if !full {
		// Under mu, so that close cannot close wake in between.
		select {
		case l.wake <- struct{}{}:
		default: // a wake-up is already due; it takes this line too
		}
	}
	l.mu.Unlock()
	if full {
		l.flush()
	}
	return len(p), nil
}

func (l *logWriter) run() {
	defer close(l.done)
	for range l.wake {
		l.flush()
	}
}

// flush writes every pending line to w. A write error is dropped: there
// is nowhere left to report it, as with a log line written directly.
func (l *logWriter) flush() {
	l.writing.Lock()
	defer l.writing.Unlock()
	l.mu.Lock()
	batch := l.pending
	l.pending = l.spare[:0]
	l.mu.Unlock()
	if len(batch) > 0 {
		_, _ = l.w.Write(batch)
	}
	l.spare = batch
}

// close writes what is pending, stops the goroutine and waits for it; later
// lines are written directly.
func (l *logWriter) close() {
	// writing first, so that no line written through after close can
	// overtake the last batch.
	l.writing.Lock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.writing.Unlock()
		return
	}
	l.closed = true
	close(l.wake)
	batch := l.pending
	l.pending = nil
	l.mu.Unlock()
	if len(batch) > 0 {
		_, _ = l.w.Write(batch)
	}
	l.writing.Unlock()
	<-l.done
}
