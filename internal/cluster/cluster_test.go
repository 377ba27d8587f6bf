package cluster_test

import (
	"errors"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// TestRedisLinksCarryTheInstancesRedis: an instance reaches Redis through
// its own links, whichever server the Sentinels name primary, so that
// cutting them cuts that instance, and that one alone, off Redis.
func TestRedisLinksCarryTheInstancesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a whole cluster; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Unavailable(t, testenv.Need{What: "redis-server", Install: "apt-get install -y redis-server"}, "the cluster starts its own Redis and Sentinels")
	}
	bin, err := cluster.BuildAPI(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(t.Context(), cluster.Options{Dir: t.TempDir(), APIBinary: bin, Instances: 2})
	if err != nil {
		if errors.Is(err, cluster.ErrNoPostgres) {
			testenv.Unavailable(t, testenv.Need{What: "initdb", Install: "apt-get install -y postgresql"}, "the cluster starts its own Postgres")
		}
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() { // before Stop
		if t.Failed() {
			t.Logf("api-0's log:\n%s", c.APIs[0].Log())
		}
	})
	if len(c.RedisLinks) != 2 || len(c.RedisLinks[0]) != len(c.Redis.Servers) {
		t.Fatalf("RedisLinks %v: want one link per instance and Redis server", c.RedisLinks)
	}

	for _, l := range c.RedisLinks[0] {
		l.Cut()
	}
	wait.For(t, 30*time.Second, "api-0's /readyz answers 503 with its Redis links cut", func() bool {
		return readyz(t, c.APIs[0]) == http.StatusServiceUnavailable
	})
	if got := readyz(t, c.APIs[1]); got != http.StatusOK {
		t.Errorf("api-1's /readyz answers %d while api-0's Redis links are cut, want 200", got)
	}
	for _, l := range c.RedisLinks[0] {
		if err := l.Heal(); err != nil {
			t.Fatal(err)
		}
	}
	wait.For(t, 30*time.Second, "api-0's /readyz answers 200 once its Redis links are healed", func() bool {
		return readyz(t, c.APIs[0]) == http.StatusOK
	})
}

// readyz is the status of the instance's GET /readyz, 0 when it does not
// answer within 5 s.
func readyz(t *testing.T, a *cluster.API) int {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	res, err := hc.Get(a.URL + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}
