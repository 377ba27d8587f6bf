package main

import (
	"bufio"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestGate runs `loadgen gate` as a process in front of a TCP server that
// echoes and records what it receives, and drives it with signals as the
// workshop does: open, bytes flow; closed (SIGUSR1), bytes are held and
// logged; opened again (SIGUSR2), the held bytes arrive, even those whose
// client hung up while they were held.
func TestGate(t *testing.T) {
	upstream, received := startEchoRecorder(t)
	cmd := exec.Command(buildBinary(t, "loadgen"), "gate", "-addr", "127.0.0.1:0", "-to", upstream)
	log := startLogged(t, cmd)
	addr := log.await(t, regexp.MustCompile(`^gate: (127\.0\.0\.1:[0-9]+) -> `))

	c := dial(t, addr)
	roundTrip(t, c, "open\n")
	<-received

	signalGate(t, cmd, syscall.SIGUSR1)
	log.await(t, regexp.MustCompile(`^gate: (closed)`))
	if _, err := io.WriteString(c, "held\n"); err != nil {
		t.Fatal(err)
	}
	log.await(t, regexp.MustCompile(`^gate: holding (5) bytes from `))
	late := dial(t, addr)
	if _, err := io.WriteString(late, "late\n"); err != nil {
		t.Fatal(err)
	}
	log.await(t, regexp.MustCompile(`^gate: holding (5) bytes from `))
	late.Close() // its bytes were sent: the gate must deliver them all the same
	select {
	case got := <-received:
		t.Fatalf("upstream received %q through a closed gate", got)
	case <-time.After(300 * time.Millisecond):
	}

	signalGate(t, cmd, syscall.SIGUSR2)
	log.await(t, regexp.MustCompile(`^gate: open: (10) held bytes let through`))
	got := map[string]bool{}
	for range 2 {
		select {
		case s := <-received:
			got[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("upstream received %v after the gate opened, want held and late", got)
		}
	}
	if !got["held\n"] || !got["late\n"] {
		t.Fatalf("upstream received %v, want held and late", got)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("echo of the held line: %q, %v", line, err)
	}
	roundTrip(t, c, "open again\n")
}

// roundTrip sends line on c and fails t unless it is echoed within 5s.
func roundTrip(t *testing.T, c net.Conn, line string) {
	t.Helper()
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != line {
		t.Fatalf("echo of %q: %q, %v", line, got, err)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func signalGate(t *testing.T, cmd *exec.Cmd, s syscall.Signal) {
	t.Helper()
	if err := cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// startEchoRecorder starts a TCP server that echoes every line it reads
// and sends it on the returned channel. It stops when t ends.
func startEchoRecorder(t *testing.T) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	received := make(chan string, 16)
	var wg sync.WaitGroup
	var mu sync.Mutex // protects conns
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					received <- line
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), received
}

// logged is the standard error of a process, line by line.
type logged struct {
	// mu protects the fields below.
	mu    sync.Mutex
	lines []string
	ended bool
	// more is closed, and replaced, when a line is added or the log ends.
	more chan struct{}
	// read is how many lines await has looked at.
	read int
}

// startLogged starts cmd and collects its standard error, however much it
// writes. The process gets SIGTERM, and is waited for, when t ends.
func startLogged(t *testing.T, cmd *exec.Cmd) *logged {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &logged{more: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			l.add(sc.Text(), false)
		}
		l.add("", true)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
	})
	return l
}

func (l *logged) add(line string, end bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if end {
		l.ended = true
	} else {
		l.lines = append(l.lines, line)
	}
	close(l.more)
	l.more = make(chan struct{})
}

// await returns the first group of the next line that matches re, skipping
// the others, or fails t after 30s or when the process has ended.
func (l *logged) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		for ; l.read < len(l.lines); l.read++ {
			if m := re.FindStringSubmatch(l.lines[l.read]); m != nil {
				l.read++
				l.mu.Unlock()
				return m[1]
			}
		}
		ended, more, seen := l.ended, l.more, strings.Join(l.lines, "\n")
		l.mu.Unlock()
		if ended {
			t.Fatalf("process exited before a line matched %s; it logged:\n%s", re, seen)
		}
		select {
		case <-more:
		case <-timeout:
			t.Fatalf("no line matched %s within 30s; logged:\n%s", re, seen)
		}
	}
}
