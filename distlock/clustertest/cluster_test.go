package clustertest_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
)

// startCluster starts three masters on free ports, joins them into a
// cluster with redis-cli (slots split in three ranges, no replicas), waits
// until every node reports cluster_state:ok, and stops the nodes when t
// ends. It returns the nodes' addresses.
func startCluster(t testing.TB) []string {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		testenv.Unavailable(t, testenv.Need{What: "redis-cli", Install: "apt-get install -y redis-server"},
			"redis-server and redis-cli are needed (apt-get install redis-server): "+err.Error())
	}

	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = testenv.StartRedisServer(t, func(port int, dir string) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(testenv.FreePort(t)),
				"--cluster-config-file", dir + "/nodes.conf"}
		}).Addr
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
