package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
)

// startDaemon runs a Redis program (redis-server as a replica, or
// redis-sentinel) on a free loopback port, kills it when t ends, and
// returns its port once it answers PING.
func startDaemon(t *testing.T, prog string, args ...string) int {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		unavailable(t, prog+" is not installed (apt-get install redis-server redis-sentinel)")
	}
	port := freePort(t)
	cmd := exec.Command(prog, append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", prog, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }() // owned: Cleanup waits for done
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	waitFor(t, 10*time.Second, prog+" answers PING", func() bool { return c.Ping(context.Background()).Err() == nil })
	return port
}

// TestRedisFailover runs the redis strategies on a Redis primary with one
// replica and one Sentinel, the API given the Sentinel as
// REDIS_URL=redis+sentinel://...; under load the primary is killed, the
// Sentinel promotes the replica, and the instances must follow it. Safety
// is judged as everywhere: every answer 201, 409 or 503, no seat confirmed
// twice, none lost. The promoted replica may never have seen a lock the
// old primary granted (replication is asynchronous), so the lock may be
// granted twice; without the payment provider's overlap count this test
// cannot see that, only whether the fenced write kept the seats right.
func TestRedisFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	locks := []string{"redis"}
	if os.Getenv(matrixEnv) == "1" {
		locks = []string{"redis", "keyed+redis"}
	}
	for _, lock := range locks {
		t.Run(lock, func(t *testing.T) { runFailover(t, lock) })
	}
}

func runFailover(t *testing.T, lock string) {
	primary := startRedis(t)
	replicaPort := startDaemon(t, "redis-server", "--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--replicaof", "127.0.0.1", strconv.Itoa(primary.port))
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	// Sentinel rewrites its file, so it must be one of the test's own.
	err := os.WriteFile(conf, fmt.Appendf(nil, `sentinel monitor seatlock 127.0.0.1 %d 1
sentinel down-after-milliseconds seatlock 500
sentinel failover-timeout seatlock 5000
sentinel parallel-syncs seatlock 1
`, primary.port), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	sentinelPort := startDaemon(t, "redis-sentinel", conf)
	sentinel := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", sentinelPort)})
	defer sentinel.Close()
	masterPort := func() string {
		addr, err := sentinel.GetMasterAddrByName(context.Background(), "seatlock").Result()
		if err != nil || len(addr) != 2 {
			return ""
		}
		return addr[1]
	}
	// The replica must be in sync, and known to the Sentinel, before the
	// primary dies, or there is nothing to promote.
	rc := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", replicaPort)})
	defer rc.Close()
	waitFor(t, 20*time.Second, "the replica is in sync and the Sentinel knows it", func() bool {
		info, err := rc.Info(context.Background(), "replication").Result()
		if err != nil || !containsAll(info, "master_link_status:up") {
			return false
		}
		replicas, err := sentinel.Replicas(context.Background(), "seatlock").Result()
		return err == nil && len(replicas) == 1
	})

	env := map[string]string{
		"REDIS_URL":    fmt.Sprintf("redis+sentinel://127.0.0.1:%d/0?master_name=seatlock", sentinelPort),
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     "2s",
		"LOCK_WAIT":    outageLockWait.String(),
	}
	apis := []*instance{startAPI(t, env), startAPI(t, env)}
	sc := createScreening(t, apis[0].url,
		fmt.Sprintf(`{"movie":"Failover","rows":26,"seats_per_row":100,"payment_delay_ms":20,"lock":%q}`, lock))
	loads := []*load{startLoad(apis[0].url, sc.ID, 3), startLoad(apis[1].url, sc.ID, 3)}
	defer func() {
		for _, l := range loads {
			l.finish()
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	killAt := time.Now()
	primary.kill(t)
	waitFor(t, 30*time.Second, "the Sentinel promotes the replica", func() bool {
		return masterPort() == strconv.Itoa(replicaPort)
	})
	promotedAt := time.Now()
	recovered := recoveredAfter(t, loads, promotedAt, "the promotion")
	time.Sleep(time.Second)
	answers := finishAll(loads)
	statuses := checkStatuses(t, answers)
	window := sentIn(answers, killAt, recovered)
	in503 := 0
	for _, a := range window {
		if a.status == http.StatusServiceUnavailable {
			in503++
		}
	}
	n := verify(t, answers, mergeSeatMaps(t, apis, sc.ID))
	if n == 0 {
		t.Error("nothing was booked at all")
	}
	t.Logf("row | %s | primary killed, replica promoted | %d answers, %d confirmed | 503: %d of %d sent from the kill to recovery, %d in all | promotion %v after the kill, both instances booking %v after it |",
		lock, len(answers), n, in503, len(window), statuses[http.StatusServiceUnavailable], promotedAt.Sub(killAt).Round(time.Millisecond), recovered.Sub(promotedAt).Round(time.Millisecond))
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
