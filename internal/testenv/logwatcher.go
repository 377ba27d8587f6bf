package testenv

import (
	"bytes"
	"regexp"
	"sync"
)

// listeningLine is what the API logs once it accepts connections; the
// address may be IPv4 or a bracketed IPv6 one.
var listeningLine = regexp.MustCompile(`listening on (http://[0-9a-fA-F.:\[\]]+)`)

// LogWatcher is the stderr of an API under test, in the test process (as
// the writer of run) or in a child process (as its Stderr): it keeps the
// whole log, and reports on Addr the base URL of the first "listening on"
// line. Only complete lines are matched, so a line that arrives in pieces
// is read whole and never as a shorter address.
type LogWatcher struct {
	addr chan string // receives the base URL once

	mu      sync.Mutex // protects buf, checked and sent: written by the API, read by the test
	buf     bytes.Buffer
	checked int  // buf up to here holds complete lines already matched
	sent    bool // the address has been sent on addr
}

// NewLogWatcher returns an empty LogWatcher.
func NewLogWatcher() *LogWatcher { return &LogWatcher{addr: make(chan string, 1)} }

// Write keeps p and looks for the listening line among the lines it
// completes. It never fails.
func (w *LogWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for !w.sent {
		rest := w.buf.Bytes()[w.checked:]
		end := bytes.IndexByte(rest, '\n')
		if end < 0 {
			break
		}
		if m := listeningLine.FindSubmatch(rest[:end]); m != nil {
			w.sent = true
			w.addr <- string(m[1]) // buffered: never blocks, sent once
		}
		w.checked += end + 1
	}
	return len(p), nil
}

// Addr receives the base URL of the listening line ("http://127.0.0.1:4321")
// once, when it has been written.
func (w *LogWatcher) Addr() <-chan string { return w.addr }

// String returns the whole log so far.
func (w *LogWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Tail returns the last n bytes of the log, marked with "..." when it had
// more.
func (w *LogWatcher) Tail(n int) string {
	s := w.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}
