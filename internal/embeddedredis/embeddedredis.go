// Package embeddedredis runs an in-process Redis server (miniredis) whose
// keys expire in real time, so that the API started without REDIS_URL runs
// the real distributed-lock code, leases and all, from one binary.
//
// It is named after what it adapts: miniredis is a Redis for tests, which
// expires keys only when told that time has passed. Server tells it, every
// 50 ms, how much real time has, so lock leases run out as on a real Redis:
//
//	srv, err := embeddedredis.Start()
//	if err != nil { ... }
//	defer srv.Close()
//	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
package embeddedredis

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// tick is how often the clock tells the server that time has passed: the
// most a key outlives its TTL.
const tick = 50 * time.Millisecond

// Server is a miniredis server on a loopback port with a clock. It owns
// one goroutine, the clock, which Close stops and waits for.
type Server struct {
	srv  *miniredis.Miniredis
	stop chan struct{} // closed by Close to stop the clock
	done chan struct{} // closed by the clock goroutine when it ends
}

// Start starts a server on a free port of 127.0.0.1, and its clock. It
// returns an error when the server cannot listen.
func Start() (*Server, error) {
	srv := miniredis.NewMiniRedis()
	if err := srv.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	s := &Server{srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
	go s.clock()
	return s, nil
}

// clock advances the server's TTLs by the real time that passed, until
// stop is closed.
func (s *Server) clock() {
	defer close(s.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.srv.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.srv.Addr() }

// Close stops the clock, waits for it, and stops the server. It always
// returns nil; it has an error so that it fits a list of closers.
func (s *Server) Close() error {
	close(s.stop)
	<-s.done
	s.srv.Close()
	return nil
}
