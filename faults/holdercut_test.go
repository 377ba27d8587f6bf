package faults

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"
)

// TestHolderCutOff cuts instance A off from its lock service while A holds
// the locks of six seats and pays for them (10 s), for longer than the lock lasts
// without renewal (LOCK_TTL 2 s, also the ZooKeeper session timeout), and
// instance B, on a clean network, books one of them. The lock service
// hands the seat on to B once A's lease (Redlock: on the two nodes cut off)
// or A's session (ZooKeeper) has expired; A must notice its loss on its
// own, cut off as it is, and stop: 409 lock_lost well before its payment
// would have ended (and without waiting for the lock service once per
// seat to release). The payment provider counts whether B's charge started
// while A's was still in progress: two holders at once. A's charge request
// is cancelled when the loss is seen and its payment voided at the provider
// by its id, so A must be told of the loss at least that long before B can
// take the seat.
// ZooKeeper's client declares the loss a third of the session after the
// disconnection, well before the server can expire the session. Redlock's
// holder declares it at the end of its validity, which cmd/api shortens by
// reservation.StopTime (150 ms, the lockers' StopMargin): without it, only
// the drift allowance (22 ms) before the nodes expire the keys, and B's
// charge started while A's was still being cancelled in 5 runs of 6
// (docs/reliability.md). Neither may overlap. It runs only with
// SEATLOCK_FAULT_MATRIX=1.
func TestHolderCutOff(t *testing.T) {
	if testing.Short() || os.Getenv(matrixEnv) != "1" {
		t.Skip("fault matrix test: set " + matrixEnv + "=1")
	}
	const paymentDelay = 10 * time.Second
	for _, c := range []struct {
		lock string
		link netLink
	}{
		{"redlock", linkRedlockTwo},
		{"zookeeper", linkZooKeeper},
	} {
		for _, prov := range providers() {
			t.Run(prov.subtest(c.lock), func(t *testing.T) {
				pay := startPayments(t, prov)
				a, b, cut := startPair(t, c.lock, c.link, pay)
				sc := createScreening(t, b.url, fmt.Sprintf(`{"movie":"Cut off","rows":1,"seats_per_row":6,"payment_delay_ms":%d,"lock":%q}`,
					paymentDelay.Milliseconds(), c.lock))

				paying := pay.chargeStarted(sc.ID)
				pa := bookAsync(a.url, sc.ID, "first", "A1", "A2", "A3", "A4", "A5", "A6")
				awaitPayment(t, paying, pa, "A's booking")
				cutAt := time.Now()
				var heals []func()
				for _, p := range cut {
					heals = append(heals, netCut.apply(t, p))
				}
				pb := bookAsync(b.url, sc.ID, "second", "A1")
				time.Sleep(time.Until(cutAt.Add(2 * netLockTTL))) // the cut under test, for two leases
				for _, heal := range heals {
					heal()
				}
				ga, gb := receive(t, pa, 2*paymentDelay), receive(t, pb, 2*paymentDelay)

				checkStatuses(t, []answer{ga, gb})
				v := judge(t, []answer{ga, gb}, seatMap(t, b.url, sc.ID))
				stats := pay.checkCharges(t, v.confirmed, []answer{ga, gb})
				noticed := ga.done.Sub(cutAt)
				t.Logf("row | %s | A cut off from %s for %v while it pays | %s | double-booked %d, lost %d | A %v %v after the cut, B %v %v after it |",
					c.lock, c.link.name, 2*netLockTTL, pay.cell(stats), v.double, v.lost,
					ga, noticed.Round(time.Millisecond), gb, gb.done.Sub(cutAt).Round(time.Millisecond))
				// A lease runs out 2 s after its last renewal, a session 2 s
				// after the server last heard from A: A must have stopped by
				// about then, not at the end of its payment. The payment is
				// long, so that half of it leaves a busy machine 3 s.
				if ga.code != "lock_lost" || noticed > paymentDelay/2 {
					t.Errorf("A answered %v %v after the cut; want 409 lock_lost within %v", ga, noticed, paymentDelay/2)
				}
				if stats.Overlaps > 0 {
					t.Errorf("%d overlapping charges: B paid while A still did", stats.Overlaps)
				}
				if gb.status != http.StatusCreated {
					t.Errorf("B answered %v; want 201 once A's lock had expired", gb)
				}
			})
		}
	}
}
