package testenv

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of a test's own, on a free port of
// 127.0.0.1, for tests that need several servers (Redlock, a Cluster) or
// must stop one without disturbing anybody else.
type RedisServer struct {
	Addr string // host:port

	cmd    *exec.Cmd
	exited chan struct{} // closed by the goroutine that waits for the process

	stopOnce sync.Once // Stop is called by tests and by the cleanup
}

// StartRedisServer starts redis-server without persistence on a free port
// and stops it when t ends. extra returns more arguments for the port and
// a private directory the server may use (nil for none). It skips t when
// redis-server is not installed, or fails it under REQUIRE_INTEGRATION=1.
func StartRedisServer(t testing.TB, extra func(port int, dir string) []string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, needRedisServer, "redis-server is not installed (apt-get install redis-server): "+err.Error())
	}
	var lastErr error
	for range 5 { // a free port can be taken by someone else before we bind it
		port, dir := FreePort(t), t.TempDir()
		args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir}
		if extra != nil {
			args = append(args, extra(port, dir)...)
		}
		s := &RedisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{})}
		s.cmd = exec.Command(bin, args...)
		s.cmd.SysProcAttr = dieWithParent()
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		go func() { // Stop waits for it
			_ = s.cmd.Wait()
			close(s.exited)
		}()
		t.Cleanup(s.Stop)
		if lastErr = s.waitReady(); lastErr == nil {
			return s
		}
		s.Stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// Stop kills the server, as a crash would, and waits for it to exit.
func (s *RedisServer) Stop() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
}

func (s *RedisServer) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
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
			return fmt.Errorf("%s: redis-server exited: %w", s.Addr, err)
		default:
		}
	}
	return fmt.Errorf("%s: %w", s.Addr, err)
}

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
