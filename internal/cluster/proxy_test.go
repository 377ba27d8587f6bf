package cluster_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
)

// echo serves one line back per line on a loopback port until t ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // ends when the listener is closed
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends when the client hangs up
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and reports whether it came back,
// and how long that took.
func roundTrip(addr string) (bool, time.Duration) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return false, 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false, 0
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "ping\n", time.Since(start)
}

func TestLinkCutSlowHeal(t *testing.T) {
	l, err := cluster.NewLink("test", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ok, _ := roundTrip(l.Listen); !ok {
		t.Fatal("a healthy link does not carry a line")
	}
	l.Cut()
	if ok, _ := roundTrip(l.Listen); ok {
		t.Fatal("a cut link carried a line")
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if ok, _ := roundTrip(l.Listen); !ok {
		t.Fatal("a healed link does not carry a line")
	}
	if err := l.Slow(300); err != nil {
		t.Fatal(err)
	}
	// Latency can only be longer on a loaded machine, never shorter.
	if ok, took := roundTrip(l.Listen); !ok || took < 200*time.Millisecond {
		t.Fatalf("a slowed link: ok %v after %v, want at least 200ms (300 ± 100)", ok, took)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
}
