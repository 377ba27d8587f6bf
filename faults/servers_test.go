package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/cluster"
	"github.com/seatlock/seatlock/internal/testenv"
)

// redisServer is a private redis-server on a port of its own, a child
// process of the test: killing it is an outage nobody else notices. Its
// data is kept in an append-only file written on every command, so that a
// restart brings back the fence counters, as a production Redis that
// fencing relies on must (see the distlock package comment).
type redisServer struct {
	port int
	dir  string
	url  string
	env  []string // added to the server's environment (a fast clock)
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// startRedis starts a private redis-server, with env added to its
// environment, and kills it when t ends. It
// skips t when redis-server is not installed (fails under
// REQUIRE_INTEGRATION=1).
func startRedis(t *testing.T, env ...string) *redisServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server", "redis-server", "redis-server is not installed (apt-get install redis-server)")
	}
	r := &redisServer{port: freePort(t), dir: t.TempDir(), env: env}
	r.url = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	r.start(t)
	t.Cleanup(func() { r.kill(t) })
	return r
}

// start runs redis-server on the server's port and waits until it answers.
func (r *redisServer) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", "always")
	r.cmd.Env = append(os.Environ(), r.env...)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	cmd := r.cmd
	// Owned by the server: kill waits for done.
	go func() { _ = cmd.Wait(); close(done) }()
	r.done = done
	c := r.client(t)
	waitFor(t, 10*time.Second, "private redis-server answers PING", func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
}

// kill ends redis-server with SIGKILL, the way a crash would, and waits.
func (r *redisServer) kill(t *testing.T) {
	t.Helper()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Errorf("redis-server pid %d did not exit after SIGKILL", r.cmd.Process.Pid)
	}
	r.cmd = nil
}

// restartEmpty kills the server and starts it again without its data, as
// a Redis without persistence comes back from a crash.
func (r *redisServer) restartEmpty(t *testing.T) {
	t.Helper()
	r.kill(t)
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	r.start(t)
}

// startZooKeeper starts a private ZooKeeper server, stopped when t ends. It
// skips t when ZooKeeper is not installed (fails under
// REQUIRE_INTEGRATION=1).
func startZooKeeper(t *testing.T) *zktest.Server {
	t.Helper()
	zk, err := zktest.Start()
	zktest.Addr(t, zk, err) // skips or fails when there is none
	t.Cleanup(zk.Stop)
	return zk
}

// client returns a go-redis client of the server, closed when t ends.
func (r *redisServer) client(t *testing.T) *redis.Client {
	t.Helper()
	return testenv.RedisClient(t, r.url)
}

// pgCluster is a private Postgres cluster (cluster.Postgres): stopping
// it is an outage that the machine's shared Postgres and the tests using
// it never see.
type pgCluster struct {
	pg  *cluster.Postgres
	url string
}

// startPostgres creates and starts a private cluster, and stops it and
// removes its files when t ends. It skips t when initdb is not installed
// (fails under REQUIRE_INTEGRATION=1).
func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	pg, err := cluster.StartPostgres()
	if errors.Is(err, cluster.ErrNoPostgres) {
		unavailable(t, "initdb", "postgresql", err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pg.Remove(); err != nil {
			t.Errorf("remove the private Postgres: %v", err)
		}
	})
	return &pgCluster{pg: pg, url: pg.URL}
}

// run runs one of the cluster's programs (psql), as the postgres user
// when the test runs as root.
func (c *pgCluster) run(t *testing.T, prog string, args ...string) {
	t.Helper()
	if err := c.pg.Run(prog, args...); err != nil {
		t.Fatal(err)
	}
}

// start starts the server and waits until it accepts connections.
func (c *pgCluster) start(t *testing.T) {
	t.Helper()
	if err := c.pg.Start(); err != nil {
		t.Fatal(err)
	}
}

// stop stops the server at once, without a checkpoint. Stopping a
// stopped server does nothing.
func (c *pgCluster) stop(t *testing.T) {
	t.Helper()
	if err := c.pg.Stop(); err != nil {
		t.Fatal(err)
	}
}

// unavailable skips t for want of what, which Debian's packages pkgs
// install, saying why; or fails t under REQUIRE_INTEGRATION=1.
func unavailable(t *testing.T, what, pkgs, why string) {
	t.Helper()
	testenv.Unavailable(t, testenv.Need{What: what, Install: "apt-get install -y " + pkgs}, why)
}
