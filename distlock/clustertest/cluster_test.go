package clustertest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// node is a redis-server process in cluster mode, of the test's own.
type node struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed by the goroutine that waits for the process

	stopOnce sync.Once
}

// startCluster starts three masters on free ports, joins them into a
// cluster with redis-cli (slots split in three ranges, no replicas), waits
// until every node reports cluster_state:ok, and stops the nodes when t
// ends. It returns the nodes' addresses.
func startCluster(t testing.TB) []string {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err == nil {
		_, err = exec.LookPath("redis-cli")
	}
	if err != nil {
		msg := "redis-server and redis-cli are needed (apt-get install redis-server): " + err.Error()
		if os.Getenv("REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = startNode(t, server).addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := exec.CommandContext(ctx, "redis-cli", append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "0", "--cluster-yes")...)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, addr := range addrs {
		waitClusterOK(t, ctx, addr)
	}
	return addrs
}

func startNode(t testing.TB, bin string) *node {
	t.Helper()
	var lastErr error
	for range 5 { // a free port can be taken by someone else before we bind it
		port, busPort := freePort(t), freePort(t)
		dir := t.TempDir()
		n := &node{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{})}
		n.cmd = exec.Command(bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(busPort),
			"--cluster-config-file", dir+"/nodes.conf", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no")
		dieWithParent(n.cmd)
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		go func() { // stop waits for it
			_ = n.cmd.Wait()
			close(n.exited)
		}()
		t.Cleanup(n.stop)
		if lastErr = n.waitReady(); lastErr == nil {
			return n
		}
		n.stop()
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// freePort returns a TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (n *node) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: n.addr, MaxRetries: -1})
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
		case <-n.exited:
			return fmt.Errorf("%s: redis-server exited: %w", n.addr, err)
		default:
		}
	}
	return fmt.Errorf("%s: %w", n.addr, err)
}

func (n *node) stop() {
	n.stopOnce.Do(func() {
		_ = n.cmd.Process.Kill()
		<-n.exited
	})
}

// waitClusterOK waits until the node at addr sees every slot served.
func waitClusterOK(t testing.TB, ctx context.Context, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	var info string
	for ctx.Err() == nil {
		var err error
		if info, err = c.ClusterInfo(ctx).Result(); err == nil && strings.Contains(info, "cluster_state:ok") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("cluster node %s not ok: %s", addr, info)
}

// newClusterClient returns a client of its own on the cluster, closed when
// t ends.
func newClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
