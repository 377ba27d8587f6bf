package faults

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// staleChargeTTL is the lease in TestStaleCharge: long enough that A, cut
// from Redis, still takes its lease for valid all through the case.
const staleChargeTTL = 10 * time.Second

// TestStaleCharge is the case a fence-checking payment provider is for: a
// holder that does not know its lock is lost starts its charge after a
// newer holder started its own.
//
// Instance A takes seat A1's lock and checks the seat; a proxy in front of
// A's Postgres holds that read. A's link to Redis is cut, so that A can
// neither renew nor hear of a loss (a failed renewal is no loss while the
// lease runs), and A's lock key is deleted, as a failover to a replica
// that never saw it, or a restart without persistence, would lose it.
// Instance B takes the lock with a newer fencing token and starts its
// charge. Then A's read goes through: the seat is still free, and A
// charges with its older token while B's charge is in progress.
//
// The plain provider takes A's charge (an overlap); then whichever write
// lands first books the seat, and the other is refused and its charge
// refunded: A's, older token and all, can be the one that books, for the
// seat's row has not seen B's token yet. The fence-checking provider
// refuses A's charge (409 stale_fence): A answers 409 lock_lost and pays
// nothing, and B books. Either way one booking, and one charge kept. The default run has the
// fence-checking provider; SEATLOCK_FAULT_MATRIX=1 runs both.
func TestStaleCharge(t *testing.T) {
	faultTest(t)
	provs := []provider{fenceProvider}
	if os.Getenv(matrixEnv) == "1" {
		provs = providers()
	}
	for _, prov := range provs {
		t.Run(prov.subtest("lock forgotten while A checks"), func(t *testing.T) { runStaleCharge(t, prov) })
	}
}

func runStaleCharge(t *testing.T, prov provider) {
	redisURL, database := testenv.RedisURL(t), testenv.NewDatabase(t)
	upstream, through := viaProxy(t, redisURL)
	link := testenv.StartProxy(t, "redis", upstream)
	gate := startGateProxy(t, database)
	pay := startPayments(t, prov)
	env := func(redisURL, databaseURL string) map[string]string {
		return map[string]string{
			"REDIS_URL":    redisURL,
			"DATABASE_URL": databaseURL,
			"LOCK_TTL":     staleChargeTTL.String(),
			"LOCK_WAIT":    "5s",
			"PAYMENT_URL":  pay.url,
		}
	}
	a := startAPI(t, env(through(link.Listen), gate.url))
	b := startAPI(t, env(redisURL, database))
	rc := testenv.RedisClient(t, redisURL)
	s := createScreening(t, b.url, `{"movie":"Stale","rows":1,"seats_per_row":4,"payment_delay_ms":2000,"lock":"keyed+redis"}`)
	// A reads the screening now, so that the first bytes it sends to
	// Postgres in its booking are its check of the seat, after its lock.
	seatMap(t, a.url, s.ID)

	held := gate.hold()
	t.Cleanup(gate.release)
	pa := bookAsync(a.url, s.ID, "stale", "A1")
	select {
	case <-held:
	case g := <-pa:
		t.Fatalf("A answered before it checked the seat: %v", g)
	case <-time.After(5 * time.Second):
		t.Fatal("A sent nothing to Postgres within 5s of its booking")
	}
	waitLocked(t, rc, s.ID, "A1")
	link.Stop()
	if n := rc.Del(context.Background(), lockKey(s.ID, "A1")).Val(); n != 1 {
		t.Fatalf("DEL of A1's lock removed %d keys, want 1", n)
	}
	paying := pay.chargeStarted(s.ID)
	pb := bookAsync(b.url, s.ID, "newer", "A1")
	awaitPayment(t, paying, pb, "B's booking")
	gate.release()
	ga, gb := receive(t, pa, 15*time.Second), receive(t, pb, 15*time.Second)

	answers := []answer{ga, gb}
	checkStatuses(t, answers)
	v := judge(t, answers, seatMap(t, b.url, s.ID))
	stats := pay.checkCharges(t, v.confirmed, answers)
	t.Logf("row | keyed+redis | lock key deleted while A checks, A cut from Redis | %s | double-booked %d, lost %d | A %v, B %v |",
		pay.cell(stats), v.double, v.lost, ga, gb)
	if v.confirmed != 1 {
		t.Errorf("%d bookings confirmed, want 1", v.confirmed)
	}
	if !prov.checkFences {
		// The plain provider takes A's charge: the proof that A charged
		// while B did, unaware of its loss. Which write then lands first
		// is up to the scheduler: the seat's row has not seen B's token
		// when A's write comes first, and A books, B getting 409.
		if stats.Overlaps != 1 {
			t.Errorf("%d overlapping charges, want A's", stats.Overlaps)
		}
		return
	}
	if stats.RefusedStale != 1 || stats.Overlaps != 0 || stats.Charges != 1 {
		t.Errorf("%+v: want A's charge refused as stale, B's alone made", stats)
	}
	if ga.status != http.StatusConflict || ga.code != "lock_lost" {
		t.Errorf("A got %v, want 409 lock_lost: its charge was refused as stale", ga)
	}
	if gb.status != http.StatusCreated {
		t.Errorf("B got %v, want 201", gb)
	}
}
