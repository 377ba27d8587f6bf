package faults

import (
	"context"
	"fmt"
	"net"
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
		unavailable(t, prog, "redis-server redis-sentinel", prog+" is not installed (apt-get install redis-server redis-sentinel)")
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
// REDIS_URL=redis+sentinel://..., with REDIS_WAIT_REPLICAS=0 and =1, and
// the payment provider counting overlapping charges (two lock holders at
// once). Under load the replica falls behind (its link to the primary gets
// latency), instance A starts paying for a probe seat, and the primary is
// killed and the link cut: whatever the replica had not received is lost.
// The Sentinel promotes the replica, instance B books the probe seat on
// it, and the old primary comes back as a replica of the new one.
//
// Without WAIT the promoted replica never saw A's lock and grants it to B
// while A still pays: an overlap. With REDIS_WAIT_REPLICAS=1, A's lock was
// granted only once the replica had it, so B waits for A; the test
// requires 0 overlaps then. Either way the fenced write keeps the seats
// right: every answer 201, 409 or 503, no seat confirmed twice, none lost.
// Under SEATLOCK_FAULT_MATRIX=1 each case runs with the plain payment
// provider and with the fence-checking one.
func TestRedisFailover(t *testing.T) {
	faultTest(t)
	locks := []string{"redis"}
	if os.Getenv(matrixEnv) == "1" {
		locks = []string{"redis", "keyed+redis"}
	}
	for _, lock := range locks {
		for _, wait := range []int{0, 1} {
			for _, prov := range providers() {
				t.Run(prov.subtest(fmt.Sprintf("%s/REDIS_WAIT_REPLICAS=%d", lock, wait)), func(t *testing.T) { runFailover(t, lock, wait, prov) })
			}
		}
	}
}

// The failover's settings. The lease outlasts a failover (from the kill to
// bookings again: docs/reliability.md times it), as the default 10 s
// lease does: a shorter one runs out before the promotion and its holder
// gives up in time. The probe's payment outlasts the failover too, so that
// A still pays when B can book; and the replication lag is below the WAIT
// timeout (a tenth of the lease), so that WAIT slows A's acquire instead of
// refusing it.
const (
	failoverTTL          = 15 * time.Second
	failoverProbePayment = 5 * time.Second
	replicationLag       = 300 * time.Millisecond
)

func runFailover(t *testing.T, lock string, waitReplicas int, prov provider) {
	primary := startRedis(t)
	// A replica joins at once, not after the default 5 s of waiting for
	// others to sync with it.
	if err := primary.client(t).ConfigSet(t.Context(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	// The replica reaches the primary through a proxy, whose latency
	// makes it fall behind, and whose stop cuts what it had not received.
	link := testenv.StartProxy(t, "replication", fmt.Sprintf("127.0.0.1:%d", primary.port))
	_, linkPort, err := net.SplitHostPort(link.Listen)
	if err != nil {
		t.Fatal(err)
	}
	replicaPort := startDaemon(t, "redis-server", "--save", "", "--appendonly", "no", "--dir", t.TempDir(),
		"--replicaof", "127.0.0.1", linkPort, "--repl-diskless-sync-delay", "0")
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	// Sentinel rewrites its file, so it must be one of the test's own.
	err = os.WriteFile(conf, fmt.Appendf(nil, `sentinel monitor seatlock 127.0.0.1 %d 1
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

	pay := startPayments(t, prov)
	env := map[string]string{
		"REDIS_URL":           fmt.Sprintf("redis+sentinel://127.0.0.1:%d/0?master_name=seatlock", sentinelPort),
		"REDIS_WAIT_REPLICAS": strconv.Itoa(waitReplicas),
		"DATABASE_URL":        testenv.NewDatabase(t),
		"LOCK_TTL":            failoverTTL.String(),
		"LOCK_WAIT":           outageLockWait.String(),
		"PAYMENT_URL":         pay.url,
	}
	apis := []*instance{startAPI(t, env), startAPI(t, env)}
	sc := createScreening(t, apis[0].url,
		fmt.Sprintf(`{"movie":"Failover","rows":26,"seats_per_row":100,"payment_delay_ms":20,"lock":%q}`, lock))
	probe := createScreening(t, apis[0].url, fmt.Sprintf(`{"movie":"Failover probe","rows":1,"seats_per_row":1,"payment_delay_ms":%d,"lock":%q}`,
		failoverProbePayment.Milliseconds(), lock))
	loads := steadyLoads(t, apis, sc.ID)

	addToxic("replication lag", fmt.Sprintf(`{"name":"lag","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d}}`,
		replicationLag.Milliseconds())).apply(t, link)
	paying := pay.chargeStarted(probe.ID)
	first := bookAsync(apis[0].url, probe.ID, "probe-a", "A1")
	awaitPayment(t, paying, first, "the probe booking on A")
	killAt := time.Now()
	link.Stop()
	primary.kill(t)
	waitFor(t, 30*time.Second, "the Sentinel promotes the replica", func() bool {
		return masterPort() == strconv.Itoa(replicaPort)
	})
	promotedAt := time.Now()
	second := make(chan answer, 1)
	go func() { second <- bookPast503(t.Context(), apis[1].url, probe.ID, "probe-b", "A1") }() // received below
	// The old primary comes back, and the Sentinel makes it a replica of
	// the new one: with REDIS_WAIT_REPLICAS=1 nothing is granted until then.
	primary.start(t)
	recovered := recoveredAfter(t, loads, promotedAt, "the promotion")
	confirmedAfter(t, loads, recovered, steadyBookings, "each instance confirms bookings after the recovery")
	answers := finishAll(loads)
	a, b := receive(t, first, 30*time.Second), receive(t, second, 30*time.Second)
	statuses := checkStatuses(t, append(answers, a, b))
	window := sentIn(answers, killAt, recovered)
	in503, slowest503 := 0, time.Duration(0)
	for _, a := range window {
		if a.status == http.StatusServiceUnavailable {
			in503++
		}
	}
	for _, a := range answers {
		if a.status == http.StatusServiceUnavailable {
			slowest503 = max(slowest503, a.latency())
		}
	}
	v := judge(t, answers, mergeSeatMaps(t, apis, sc.ID))
	if v.confirmed == 0 {
		t.Error("nothing was booked at all")
	}
	pv := judge(t, []answer{a, b}, seatMap(t, apis[0].url, probe.ID))
	stats := pay.checkCharges(t, v.confirmed+pv.confirmed, append(answers, a, b))
	if waitReplicas > 0 && stats.Overlaps != 0 {
		t.Errorf("%d overlapping charges: two holders at once, although the only replica acknowledged every lock before it was granted", stats.Overlaps)
	}
	t.Logf("row | %s | REDIS_WAIT_REPLICAS=%d | %d answers, %d confirmed | %s | double-booked %d, lost %d | 503: %d of %d sent from the kill to recovery (%.0f%%), %d in all, the slowest %v | promotion %v after the kill, both instances booking %v after it | probe: A %v, B %v |",
		lock, waitReplicas, len(answers), v.confirmed, pay.cell(stats), v.double+pv.double, v.lost+pv.lost,
		in503, len(window), percent(in503, len(window)), statuses[http.StatusServiceUnavailable], slowest503.Round(time.Millisecond),
		promotedAt.Sub(killAt).Round(time.Millisecond), recovered.Sub(promotedAt).Round(time.Millisecond), a, b)
}

// bookPast503 books until the answer is not a 503 (the instance has not
// found the new primary yet, or, with REDIS_WAIT_REPLICAS, the primary has
// no replica yet), for at most 20 s, and returns the last answer. A 503
// books nothing, so dropping those is safe: the seat map is checked.
func bookPast503(ctx context.Context, base, screeningID, customer string, seats ...string) answer {
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		a := book(ctx, base, screeningID, customer, seats...)
		if a.status != http.StatusServiceUnavailable || time.Now().After(deadline) || ctx.Err() != nil {
			return a
		}
	}
}

// percent returns n as a percentage of of, 0 for none of none.
func percent(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
