package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is one redis-server of the cluster: the primary or the
// replica, whichever the Sentinels made it. It keeps its port across
// restarts, and with a clock library its wall clock can be jumped.
type RedisServer struct {
	Port int

	dir      string
	jumpFile string   // FASTCLOCK_JUMP_FILE, empty without a clock library
	env      []string // added to redis-server's environment
	args     []string // added to its command line
	proc     *process
}

// Addr is the server's host:port.
func (r *RedisServer) Addr() string { return loopback(r.Port) }

func newRedisServer(dir, clockLib string, args ...string) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &RedisServer{Port: port, dir: dir, args: args}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if clockLib != "" {
		r.jumpFile = filepath.Join(dir, "clock-jump")
		if err := os.WriteFile(r.jumpFile, []byte("0"), 0o644); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		r.env = []string{"LD_PRELOAD=" + clockLib, "FASTCLOCK_JUMP_FILE=" + r.jumpFile}
	}
	return r, r.start()
}

// start runs redis-server on its port, without persistence, and waits
// until it answers PING.
func (r *RedisServer) start() error {
	args := append([]string{"--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}, r.args...)
	cmd := exec.Command("redis-server", args...)
	cmd.Env = append(os.Environ(), r.env...)
	p, err := startProcess("redis-server :"+strconv.Itoa(r.Port), cmd)
	if err != nil {
		return err
	}
	r.proc = p
	return waitPing(r.Addr(), p)
}

// Kill ends the server with SIGKILL; its data is gone.
func (r *RedisServer) Kill() error { return r.proc.kill() }

// Restart starts a killed server again, empty, on its port.
func (r *RedisServer) Restart() error {
	if err := r.proc.kill(); err != nil {
		return err
	}
	return r.start()
}

// Running reports whether the server's process is up.
func (r *RedisServer) Running() bool { return r.proc.running() }

// JumpClock sets how far ahead of the real time the server's wall clock
// is (0 = correct). It fails without a clock library.
func (r *RedisServer) JumpClock(d time.Duration) error {
	if r.jumpFile == "" {
		return fmt.Errorf("cluster: redis :%d has no clock library", r.Port)
	}
	return os.WriteFile(r.jumpFile, []byte(strconv.FormatFloat(d.Seconds(), 'f', 3, 64)), 0o644)
}

// FlushAll empties the server, as FLUSHALL does.
func (r *RedisServer) FlushAll(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer c.Close()
	if err := c.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("cluster: flushall on %s: %w", r.Addr(), err)
	}
	return nil
}

// waitPing waits up to 10 s for a Redis program on addr to answer PING,
// or for its process to end.
func waitPing(addr string, p *process) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	return poll(10*time.Second, p.name+" answers PING", func() bool {
		if !p.running() {
			return true // reported below
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	}, func() error {
		if !p.running() {
			return fmt.Errorf("cluster: %s exited at start", p.name)
		}
		return nil
	})
}
