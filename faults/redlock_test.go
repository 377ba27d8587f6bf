package faults

import (
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestRedlockNodeAmnesia is the case against Redlock on nodes without
// persistence, run: instance A holds a seat's Redlock lock and pays for
// it, one of the three nodes restarts empty, and instance B books the same
// seat. The payment provider counts whether B's charge started while A's
// was in progress: two holders at once.
//
// When all three nodes granted A's lock, the two that kept it are still a
// majority, and B cannot gather one: it waits for A (0 overlaps). When one
// node was down at A's grant (A holds a majority of two), and one of those
// two restarts empty, the restarted node and the one that was down make a
// majority for B while A still pays: 1 overlap. The fenced write keeps the
// seat right in both: no seat confirmed twice, none lost.
func TestRedlockNodeAmnesia(t *testing.T) {
	faultTest(t)
	for _, c := range []amnesiaCase{
		{"all nodes up at the grant", false, 0},
		{"a node down at the grant", true, 1},
	} {
		for _, prov := range providers() {
			t.Run(prov.subtest(c.name), func(t *testing.T) { runAmnesia(t, c, prov) })
		}
	}
}

// amnesiaCase is one case of TestRedlockNodeAmnesia.
type amnesiaCase struct {
	name         string
	downAtGrant  bool
	wantOverlaps int64
}

func runAmnesia(t *testing.T, c amnesiaCase, prov provider) {
	nodes := make([]*redisServer, 3)
	urls := make([]string, 3)
	for i := range nodes {
		nodes[i] = startRedis(t)
		urls[i] = nodes[i].url
	}
	pay := startPayments(t, prov)
	env := map[string]string{
		"REDIS_URL":    testenv.RedisURL(t),
		"DATABASE_URL": testenv.NewDatabase(t),
		"REDLOCK_URLS": strings.Join(urls, ","),
		"LOCK_WAIT":    outageLockWait.String(),
		"PAYMENT_URL":  pay.url,
	}
	a, b := startAPI(t, env), startAPI(t, env)
	sc := createScreening(t, a.url, `{"movie":"Amnesia","rows":1,"seats_per_row":1,"payment_delay_ms":3000,"lock":"redlock"}`)

	if c.downAtGrant {
		nodes[2].kill(t)
	}
	paying := pay.chargeStarted(sc.ID)
	pa := bookAsync(a.url, sc.ID, "first", "A1")
	awaitPayment(t, paying, pa, "A's booking")
	faultAt := time.Now()
	nodes[0].restartEmpty(t)
	if c.downAtGrant {
		nodes[2].start(t)
	}
	gb := book(t.Context(), b.url, sc.ID, "second", "A1")
	ga := receive(t, pa, 15*time.Second)
	checkStatuses(t, []answer{ga, gb})
	v := judge(t, []answer{ga, gb}, seatMap(t, a.url, sc.ID))
	stats := pay.checkCharges(t, v.confirmed, []answer{ga, gb})
	t.Logf("row | redlock | a node restarts empty while A pays, %s | %s | double-booked %d, lost %d | A %v, B %v (B answered %v after the restart) |",
		c.name, pay.cell(stats), v.double, v.lost, ga, gb, gb.done.Sub(faultAt).Round(time.Millisecond))
	if stats.Overlaps != c.wantOverlaps {
		t.Errorf("%d overlapping charges, want %d", stats.Overlaps, c.wantOverlaps)
	}
	if v.confirmed != 1 {
		t.Errorf("%d bookings confirmed, want 1", v.confirmed)
	}
}
