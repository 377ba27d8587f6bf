package faults

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/testenv"
)

// matrixEnv, set to 1, runs every strategy under every restart fault in
// TestRestartMidLoad; without it a fast subset runs.
const matrixEnv = "SEATLOCK_FAULT_MATRIX"

// restartFault is a backend restarting under load: the server is killed
// and started again at once, so the fault is the restart itself, not an
// outage of a set length.
type restartFault struct {
	name string
	// restart is given the case's servers; it returns when the backend
	// answers again.
	restart func(t *testing.T, s *restartServers)
}

type restartServers struct {
	redis     *redisServer
	postgres  *pgCluster
	redlock   []*redisServer // the redlock strategy's nodes, for its faults only
	zookeeper *zktest.Server // for its faults only
}

var (
	// redisEmpty restarts Redis without its data, as a Redis without
	// persistence (compose.yaml's) comes back from a crash: every lock and
	// every fence counter is gone.
	redisEmpty = restartFault{name: "redis restarts empty", restart: func(t *testing.T, s *restartServers) {
		s.redis.restartEmpty(t)
	}}
	// redlockNodeEmpty restarts one of Redlock's three nodes without its
	// data. Every lock granted while all three were up is still on the
	// other two, a majority, so no second holder can gather one.
	redlockNodeEmpty = restartFault{name: "a redlock node restarts empty", restart: func(t *testing.T, s *restartServers) {
		s.redlock[0].restartEmpty(t)
	}}
	// zookeeperRestart kills the ZooKeeper server and starts it again with
	// its data: sessions and their lock nodes come back from its log.
	zookeeperRestart = restartFault{name: "zookeeper restarts", restart: func(t *testing.T, s *restartServers) {
		if err := s.zookeeper.Restart(); err != nil {
			t.Fatal(err)
		}
	}}
	// postgresRestart stops Postgres at once (no checkpoint) and starts it.
	postgresRestart = restartFault{name: "postgres restarts", restart: func(t *testing.T, s *restartServers) {
		s.postgres.stop(t)
		s.postgres.start(t)
	}}
)

// TestRestartMidLoad restarts a backend while two API instances take
// bookings on one screening, for each lock strategy, and judges the
// outcome from the answers and the final seat map: no seat confirmed
// twice, no confirmed seat lost, no answer but 201, 409 and 503. It logs
// one row per case for the table in docs/reliability.md: the overlapping
// charges the payment provider counted (two lock holders at once), the
// share of 503 answers and the time from the restart to the first booking
// confirmed on both instances. Under SEATLOCK_FAULT_MATRIX=1 each case runs
// with the plain payment provider and with the fence-checking one. Redlock
// and ZooKeeper run under their own
// servers' restarts and under Postgres's (the store); a Redis restart
// does not touch them.
func TestRestartMidLoad(t *testing.T) {
	faultTest(t)
	type restartCase struct {
		lock  string
		fault restartFault
	}
	cases := []restartCase{{"redis", redisEmpty}, {"postgres-xact", postgresRestart}, {"redlock", redlockNodeEmpty}}
	if os.Getenv(matrixEnv) == "1" {
		cases = nil
		for _, f := range []restartFault{redisEmpty, postgresRestart} {
			for _, lock := range []string{"redis", "keyed+redis", "postgres", "postgres-xact", "file"} {
				cases = append(cases, restartCase{lock, f})
			}
		}
		cases = append(cases, restartCase{"redlock", postgresRestart}, restartCase{"zookeeper", postgresRestart},
			restartCase{"redlock", redlockNodeEmpty}, restartCase{"zookeeper", zookeeperRestart})
	}
	for _, c := range cases {
		for _, prov := range providers() {
			t.Run(prov.subtest(c.lock+"/"+c.fault.name), func(t *testing.T) { runRestart(t, c.lock, c.fault, prov) })
		}
	}
}

func runRestart(t *testing.T, lock string, fault restartFault, prov provider) {
	s := &restartServers{redis: startRedis(t)}
	databaseURL := testenv.NewDatabase(t)
	if fault.name == postgresRestart.name {
		s.postgres = startPostgres(t)
		databaseURL = s.postgres.url
	}
	pay := startPayments(t, prov)
	env := map[string]string{
		"REDIS_URL":    s.redis.url,
		"DATABASE_URL": databaseURL,
		"LOCK_TTL":     "2s",
		"LOCK_WAIT":    outageLockWait.String(),
		"LOCK_DIR":     t.TempDir(), // one host: both instances share it
		"PAYMENT_URL":  pay.url,
	}
	s.redlock, s.zookeeper = startLockServers(t, lock, env)
	apis := []*instance{startAPI(t, env), startAPI(t, env)}
	sc := createScreening(t, apis[0].url,
		fmt.Sprintf(`{"movie":"Restart","rows":26,"seats_per_row":100,"payment_delay_ms":20,"lock":%q}`, lock))

	// A seat booked and cancelled before the fault, booked again after:
	// with the Redis strategies the fence counter is lost, and the next
	// token must still be above the one the seat's row remembers (else
	// the seat refuses every booking with 409 lock_lost).
	probe := createScreening(t, apis[0].url, fmt.Sprintf(`{"movie":"Probe","rows":1,"seats_per_row":1,"lock":%q}`, lock))
	first := book(t.Context(), apis[0].url, probe.ID, "probe-1", "A1")
	if first.status != http.StatusCreated {
		t.Fatalf("probe booking before the fault: %v", first)
	}
	cancelBooking(t, apis[0].url, first.booking.ID, first.booking.Token)

	loads := steadyLoads(t, apis, sc.ID)
	downAt := time.Now()
	fault.restart(t, s)
	upAt := time.Now()

	recovered := recoveredAfter(t, loads, upAt, "the restart")
	confirmedAfter(t, loads, recovered, steadyBookings, "each instance confirms bookings after the recovery")
	answers := finishAll(loads)
	statuses := checkStatuses(t, answers)
	window := sentIn(answers, downAt, recovered)
	unavailable := 0
	for _, a := range window {
		if a.status == http.StatusServiceUnavailable {
			unavailable++
		}
	}
	share := 0.0
	if len(window) > 0 {
		share = float64(unavailable) / float64(len(window))
	}
	again := book(t.Context(), apis[1].url, probe.ID, "probe-2", "A1")
	if again.status != http.StatusCreated {
		t.Errorf("the seat booked and cancelled before the restart, booked again after it: %v, want 201", again)
	}
	v := judge(t, answers, mergeSeatMaps(t, apis, sc.ID))
	if v.confirmed == 0 {
		t.Error("nothing was booked at all")
	}
	probes := 0 // the booking cancelled before the fault was refunded
	if again.status == http.StatusCreated {
		probes++
	}
	stats := pay.checkCharges(t, v.confirmed+probes, append(answers, again))
	t.Logf("row | %s | %s | %d answers, %d confirmed | %s | double-booked %d, lost %d | 503: %d of %d sent from the fault to recovery (%.0f%%), %d in all | restart took %v, recovered %v after it | booked+cancelled seat rebooked: %d %s |",
		lock, fault.name, len(answers), v.confirmed, pay.cell(stats), v.double, v.lost,
		unavailable, len(window), 100*share, statuses[http.StatusServiceUnavailable],
		upAt.Sub(downAt).Round(time.Millisecond), recovered.Sub(upAt).Round(time.Millisecond), again.status, again.code)
}

// startLockServers starts the servers of a strategy that has its own
// (redlock: three private redis-servers; zookeeper: a ZooKeeper server),
// stopped when t ends, and names them in env as cmd/api reads them.
func startLockServers(t *testing.T, lock string, env map[string]string) (redlock []*redisServer, zookeeper *zktest.Server) {
	t.Helper()
	switch lock {
	case "redlock":
		urls := make([]string, 3)
		for i := range urls {
			redlock = append(redlock, startRedis(t))
			urls[i] = redlock[i].url
		}
		env["REDLOCK_URLS"] = strings.Join(urls, ",")
	case "zookeeper":
		zookeeper = startZooKeeper(t)
		env["ZOOKEEPER_SERVERS"] = zookeeper.Addr
	}
	return redlock, zookeeper
}

// mergeSeatMaps returns the seat map as the first instance sees it, after
// checking that the second sees the same: both read one database.
func mergeSeatMaps(t *testing.T, apis []*instance, screeningID string) map[string]seat {
	t.Helper()
	m := seatMap(t, apis[0].url, screeningID)
	for id, s := range seatMap(t, apis[1].url, screeningID) {
		if m[id].BookingID != s.BookingID {
			t.Errorf("seat %s: instance 0 sees booking %q, instance 1 %q", id, m[id].BookingID, s.BookingID)
		}
	}
	return m
}

// recoveredAfter waits until every load has a booking sent after since
// confirmed, and returns when the last of those first confirmations came.
func recoveredAfter(t *testing.T, loads []*load, since time.Time, what string) time.Time {
	t.Helper()
	return confirmedAfter(t, loads, since, 1, "each instance confirms a booking sent after "+what)
}

// confirmedAfter waits until every load has n bookings confirmed that were
// sent after since, and returns when the last of those was answered. A
// test that wants load running before or after a fault waits for it so,
// rather than for a time that a busy machine fills with fewer bookings.
func confirmedAfter(t *testing.T, loads []*load, since time.Time, n int, what string) time.Time {
	t.Helper()
	var latest time.Time
	waitFor(t, 30*time.Second, what, func() bool {
		latest = time.Time{}
		for _, l := range loads {
			confirmed := 0
			for _, a := range sentIn(l.snapshot(), since, time.Now()) {
				if a.status != http.StatusCreated {
					continue
				}
				confirmed++
				if a.done.After(latest) {
					latest = a.done
				}
				if confirmed == n {
					break
				}
			}
			if confirmed < n {
				return false
			}
		}
		return true
	})
	return latest
}

// steadyLoads starts three clients booking on the screening on each of
// apis, and returns once each instance confirms bookings: the steady state
// before a fault. The loads are finished when t ends, also when the test
// stops half-way.
func steadyLoads(t *testing.T, apis []*instance, screeningID string) []*load {
	t.Helper()
	loads := make([]*load, len(apis))
	for i, a := range apis {
		loads[i] = startLoad(a.url, screeningID, 3)
	}
	t.Cleanup(func() { finishAll(loads) })
	confirmedAfter(t, loads, time.Time{}, steadyBookings, "each instance confirms bookings before the fault")
	return loads
}

// finishAll stops the loads and returns all their answers.
func finishAll(loads []*load) []answer {
	var answers []answer
	for _, l := range loads {
		answers = append(answers, l.finish()...)
	}
	return answers
}

// checkStatuses fails t for any answer but 201, 409 and 503 (a 500, or no
// answer), and counts the answers by status.
func checkStatuses(t *testing.T, answers []answer) map[int]int {
	t.Helper()
	statuses := map[int]int{}
	for _, a := range answers {
		statuses[a.status]++
		switch a.status {
		case http.StatusCreated, http.StatusConflict, http.StatusServiceUnavailable:
		default:
			t.Errorf("answer %v: want 201, 409 or 503", a)
		}
	}
	return statuses
}
