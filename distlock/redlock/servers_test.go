package redlock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/redlock"
)

// server is a redis-server process of the test's own, on a free port,
// without persistence: a Redlock node.
type server struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed by the goroutine that waits for the process

	stopOnce sync.Once // stop is called by tests and by the cleanup
}

// startServers starts n redis-server processes and stops them when t ends.
// It skips t when redis-server is not installed, or fails it under
// REQUIRE_INTEGRATION=1.
func startServers(t testing.TB, n int) []*server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is not installed (apt-get install redis-server): " + err.Error()
		if os.Getenv("REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	servers := make([]*server, n)
	for i := range servers {
		servers[i] = startServer(t, bin)
	}
	return servers
}

func startServer(t testing.TB, bin string) *server {
	t.Helper()
	var lastErr error
	for range 5 { // a free port can be taken by someone else before we bind it
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir())
		dieWithParent(s.cmd)
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		s.exited = make(chan struct{})
		go func() { // stop waits for it
			_ = s.cmd.Wait()
			close(s.exited)
		}()
		t.Cleanup(s.stop)
		if lastErr = s.waitReady(); lastErr == nil {
			return s
		}
		s.stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// freePort returns a TCP port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (s *server) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1})
	defer c.Close()
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s: redis-server exited: %w", s.addr, err)
		default:
		}
	}
	return fmt.Errorf("%s: %w", s.addr, err)
}

// stop kills the server, as a crash would, and waits for it to exit.
func (s *server) stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

// client returns a client of its own on s, closed when t ends, configured
// as the package doc advises for a Redlock node: it honours context
// deadlines, so that NodeTimeout cuts a call to a hung node short, and it
// does not retry, so that a dead node fails at once.
func (s *server) client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  s.addr,
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
