package redlock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/redlock"
	"github.com/seatlock/seatlock/internal/testenv"
)

// server is a Redlock node: a redis-server process of the test's own.
type server struct{ *testenv.RedisServer }

// startServers starts n redis-server processes and stops them when t ends.
// It skips t when redis-server is not installed, or fails it under
// REQUIRE_INTEGRATION=1.
func startServers(t testing.TB, n int) []*server {
	t.Helper()
	servers := make([]*server, n)
	for i := range servers {
		servers[i] = &server{testenv.StartRedisServer(t, nil)}
	}
	return servers
}

// stop kills the server, as a crash would, and waits for it to exit.
func (s *server) stop() { s.Stop() }

// client returns a client of its own on s, closed when t ends.
func (s *server) client(t testing.TB) *redis.Client { return nodeClient(t, s.Addr) }

// nodeClient returns a client of its own on the node at addr, closed when
// t ends, configured as the package doc advises for a Redlock node: it
// honours context deadlines, so that NodeTimeout cuts a call to a hung
// node short, and it does not retry, so that a dead node fails at once.
func nodeClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DialerRetryTimeout:    time.Millisecond,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clients returns a client of its own on each of servers.
func clients(t testing.TB, servers []*server) []redlock.Client {
	t.Helper()
	cs := make([]redlock.Client, len(servers))
	for i, s := range servers {
		cs[i] = s.client(t)
	}
	return cs
}
