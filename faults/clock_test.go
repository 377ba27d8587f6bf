package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/internal/testenv"
)

// TestFastLockClock runs the redis strategy on a lock server whose clock
// runs fast: an in-process Redis (the embedded one, miniredis) whose keys
// expire Rate times too early, given to two API instances as REDIS_URL.
// (Debian's faketime cannot do this to Debian's redis-server: libfaketime
// recurses into clock_gettime through jemalloc and the server never
// starts; see docs/reliability.md.)
//
// Instance A pays 2 s for a seat under a 2 s lease, renewed every third of
// it; instance B books the same seat meanwhile. At twice the speed the
// server keeps a lease for 1 s of real time, longer than the 0.67 s
// between renewals, so the watchdog hides the fast clock. At eight times,
// the lease lasts 0.25 s: it runs out between renewals, A loses its lock,
// and B, waiting, may take it while A still pays. Whatever the clock, the
// fenced write keeps the seat right: the test requires no seat confirmed
// twice or lost, and logs the overlaps.
func TestFastLockClock(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	for _, rate := range []float64{2, 8} {
		t.Run(fmt.Sprintf("clock x%g", rate), func(t *testing.T) {
			srv, err := embeddedredis.StartWith(embeddedredis.Options{Rate: rate})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			pay := startPayments(t)
			env := map[string]string{
				"REDIS_URL":    "redis://" + srv.Addr() + "/0",
				"DATABASE_URL": testenv.NewDatabase(t),
				"LOCK_TTL":     "2s",
				"LOCK_WAIT":    outageLockWait.String(),
				"PAYMENT_URL":  pay.url,
			}
			a, b := startAPI(t, env), startAPI(t, env)
			sc := createScreening(t, a.url, `{"movie":"Fast clock","rows":1,"seats_per_row":1,"payment_delay_ms":2000,"lock":"redis"}`)
			paying := pay.chargeStarted(sc.ID)
			pa := bookAsync(a.url, sc.ID, "first", "A1")
			awaitPayment(t, paying, pa, "A's booking")
			gb := book(t.Context(), b.url, sc.ID, "second", "A1")
			ga := receive(t, pa, 15*time.Second)
			checkStatuses(t, []answer{ga, gb})
			v := judge(t, []answer{ga, gb}, seatMap(t, a.url, sc.ID))
			stats := pay.Stats()
			t.Logf("row | redis | lock server's clock x%g | overlaps %d (charges %d, refunds %d) | double-booked %d, lost %d | A %v, B %v |",
				rate, stats.Overlaps, stats.Charges, stats.Refunds, v.double, v.lost, ga, gb)
		})
	}
}
