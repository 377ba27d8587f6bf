package testenv_test

import (
	"strings"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

func TestLogWatcher(t *testing.T) {
	const log = "time=x level=INFO msg=\"store: in memory\"\n" +
		"time=x level=INFO msg=\"listening on http://127.0.0.1:43210\" lock=keyed+redis\n" +
		"time=x level=INFO msg=\"listening on http://127.0.0.1:1\"\n"
	for _, tc := range []struct {
		name  string
		write func(*testenv.LogWatcher)
	}{
		{"in one write", func(w *testenv.LogWatcher) { w.Write([]byte(log)) }},
		// A pipe delivers what it has: the address must not be read
		// before its line is complete ("http://127.0.0.1:4").
		{"a byte at a time", func(w *testenv.LogWatcher) {
			for i := range len(log) {
				w.Write([]byte{log[i]})
			}
		}},
		{"split inside the address", func(w *testenv.LogWatcher) {
			cut := strings.Index(log, ":43210") + 3
			w.Write([]byte(log[:cut]))
			w.Write([]byte(log[cut:]))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := testenv.NewLogWatcher()
			tc.write(w)
			select {
			case got := <-w.Addr():
				if got != "http://127.0.0.1:43210" {
					t.Errorf("Addr = %q, want http://127.0.0.1:43210", got)
				}
			default:
				t.Fatal("no address on Addr")
			}
			select {
			case got := <-w.Addr():
				t.Errorf("a second address on Addr: %q", got)
			default:
			}
			if w.String() != log {
				t.Errorf("String() = %q, want the whole log", w.String())
			}
		})
	}
	t.Run("IPv6", func(t *testing.T) {
		w := testenv.NewLogWatcher()
		w.Write([]byte("msg=\"listening on http://[::1]:8080\"\n"))
		if got := <-w.Addr(); got != "http://[::1]:8080" {
			t.Errorf("Addr = %q, want http://[::1]:8080", got)
		}
	})
	t.Run("no listening line yet", func(t *testing.T) {
		w := testenv.NewLogWatcher()
		w.Write([]byte("msg=\"listening on http://127.0.0.1:43210")) // no newline yet
		select {
		case got := <-w.Addr():
			t.Errorf("Addr = %q before the line was complete", got)
		default:
		}
		if got := w.Tail(6); got != "...:43210" {
			t.Errorf("Tail(6) = %q, want ...:43210", got)
		}
	})
}
