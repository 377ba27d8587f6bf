package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// runGate is `loadgen gate`: a TCP proxy from -addr to -to with a gate on
// the way in. SIGUSR1 closes the gate: from then on the bytes a client
// sends are read and held, not passed on, and each held chunk is logged.
// SIGUSR2 opens it: the held bytes go through, in order, and the rest
// flows again. Answers from -to always flow back.
//
// It makes a delay deterministic in a workshop: put it between one API
// instance and its payment provider (or its Postgres), close it, and that
// instance's next charge (or write) waits in the gate, for exactly as long
// as the lab wants, while the instance believes it has been sent.
func runGate(ctx context.Context, args []string, stderr io.Writer) error {
	fs, addr := serverFlags("loadgen gate", "127.0.0.1:9101")
	to := fs.String("to", "", "host:port to forward to (required)")
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	if *to == "" {
		return usagef("gate: -to is required (see loadgen gate -h)")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usagef("gate: %v", err)
	}
	// Signals are registered before the address is logged, so that a
	// script that waits for the address can signal at once.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	g := &gate{to: *to, log: &syncWriter{w: stderr}, conns: make(map[net.Conn]bool)}
	fmt.Fprintf(stderr, "gate: %s -> %s, open (SIGUSR1 closes it, SIGUSR2 opens it)\n", ln.Addr(), *to)

	var wg sync.WaitGroup
	wg.Go(func() { g.serve(ln) })
	for {
		select {
		case s := <-sigs:
			if s == syscall.SIGUSR1 {
				g.close()
			} else {
				g.open()
			}
		case <-ctx.Done():
			// serve ends once the listener is closed; then no pair of
			// connections is added, and shut can close them all.
			ln.Close()
			wg.Wait()
			g.shut()
			return nil
		}
	}
}

// gate is the proxy of runGate.
type gate struct {
	to  string
	log io.Writer

	// mu protects the fields below.
	mu sync.Mutex
	// wait is nil while the gate is open. While it is closed, it is the
	// channel that open closes: a client's bytes read after the gate
	// closed wait on it before they are written on.
	wait chan struct{}
	// held counts the bytes held since the gate closed.
	held int
	// conns are the connections in use, both sides, for shut.
	conns map[net.Conn]bool
	// pipes counts the goroutines that copy bytes; shut waits for them.
	pipes sync.WaitGroup
}

// serve accepts connections until ln is closed.
func (g *gate) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", g.to)
		if err != nil {
			fmt.Fprintf(g.log, "gate: %s: %v\n", g.to, err)
			c.Close()
			continue
		}
		g.track(c, up)
		// Each direction in its own goroutine; when one ends, both
		// connections are closed, which ends the other.
		g.pipes.Go(func() {
			g.forward(up, c)
			g.untrack(c, up)
		})
		g.pipes.Go(func() {
			_, _ = io.Copy(c, up)
			g.untrack(c, up)
		})
	}
}

// forward copies the client's bytes to up, holding each chunk while the
// gate is closed. A held chunk is written even when the client has gone
// meanwhile: it was sent, and the gate only delays it.
func (g *gate) forward(up, client net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			g.mu.Lock()
			wait := g.wait
			if wait != nil {
				g.held += n
				fmt.Fprintf(g.log, "gate: holding %d bytes from %s\n", n, client.RemoteAddr())
			}
			g.mu.Unlock()
			if wait != nil {
				<-wait
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// close closes the gate; closing a closed gate changes nothing.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wait == nil {
		g.wait, g.held = make(chan struct{}), 0
		fmt.Fprintln(g.log, "gate: closed: what clients send is held")
	}
}

// open opens the gate and lets the held bytes through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.wait != nil {
		close(g.wait)
		fmt.Fprintf(g.log, "gate: open: %d held bytes let through\n", g.held)
		g.wait = nil
	}
}

// track adds a pair of connections.
func (g *gate) track(c, up net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns[c], g.conns[up] = true, true
}

// untrack closes a pair of connections and forgets them.
func (g *gate) untrack(c, up net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c.Close()
	up.Close()
	delete(g.conns, c)
	delete(g.conns, up)
}

// shut opens the gate, closes every connection and waits for the copies
// to end. It runs once serve has returned.
func (g *gate) shut() {
	g.open()
	g.mu.Lock()
	for c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.pipes.Wait()
}

// syncWriter serialises writes to w: the gate logs from several
// goroutines.
type syncWriter struct {
	mu sync.Mutex // protects w
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
