package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// clockTTL is the lease of the clock tests. The watchdog renews it every
// third of it, so a lock server whose clock runs less than three times as
// fast as the holder's keeps the key until the renewal, and a faster one
// lets it expire first.
const clockTTL = 2 * time.Second

// clockPayment is the payment inside the critical section: several
// renewals long, so that a fault during it is met by one.
const clockPayment = time.Second

// fastClockLibrary builds the cluster's clock library, an LD_PRELOAD
// library that makes a process's clocks run fast and its wall clock jump,
// and returns its path. It skips t without a C compiler (fails under
// REQUIRE_INTEGRATION=1).
func fastClockLibrary(t *testing.T) string {
	t.Helper()
	lib, err := cluster.BuildClockLibrary(t.TempDir())
	if errors.Is(err, cluster.ErrNoCompiler) {
		unavailable(t, "a C compiler", "gcc", "no C compiler to build the fast clock (apt-get install gcc)")
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// clockFault is a lock server whose clock misbehaves, for one strategy.
type clockFault struct {
	name string
	lock string // redis or redlock
	// rates are the clock rates of the lock's Redis servers (one for
	// redis, three for redlock); 1 is a correct clock.
	rates []float64
	// jump, when not zero, is how far the wall clock of every server
	// jumps ahead in the middle of the first holder's payment.
	jump time.Duration
	// overlaps says whether the fault lets two holders in at once: the
	// lease expires on the server (or on a majority of them) before the
	// holder's renewal.
	overlaps bool
}

var clockFaults = []clockFault{
	{name: "redis, clock 4x", lock: "redis", rates: []float64{4}, overlaps: true},
	{name: "redis, wall clock jumps 30s", lock: "redis", rates: []float64{1}, jump: 30 * time.Second, overlaps: true},
	{name: "redis, clock 2x", lock: "redis", rates: []float64{2}},
	{name: "redlock, 1 of 3 clocks 4x", lock: "redlock", rates: []float64{4, 1, 1}},
	{name: "redlock, 2 of 3 clocks 4x", lock: "redlock", rates: []float64{4, 4, 1}, overlaps: true},
}

// TestLockServerClock runs two instances against lock servers whose
// clocks run fast or jump (a real redis-server with
// internal/cluster/fastclock/fastclock.c preloaded), while several customers book one seat through a payment
// provider that counts overlapping charges. Safety must hold whatever the
// clock does: one booking at most, no answer but 201, 409 and 503. The
// lock's promise is judged by the overlaps: where the lease expires on the
// server (a majority of them, for Redlock) before the holder renews it,
// two holders pay at once and the test requires the overlap to show
// (proof that the fault was in effect); where it does not, it requires
// none. It logs one row per case for docs/reliability.md. A fast subset
// runs by default; with SEATLOCK_FAULT_MATRIX=1, every case, with the
// plain payment provider and with the fence-checking one.
func TestLockServerClock(t *testing.T) {
	faultTest(t)
	lib := fastClockLibrary(t)
	for i, f := range clockFaults {
		if i >= 2 && os.Getenv(matrixEnv) != "1" {
			break
		}
		for _, prov := range providers() {
			t.Run(prov.subtest(f.name), func(t *testing.T) { runClockFault(t, lib, f, prov) })
		}
	}
}

func runClockFault(t *testing.T, lib string, f clockFault, prov provider) {
	jumpFile := filepath.Join(t.TempDir(), "jump")
	if err := os.WriteFile(jumpFile, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, rate := range f.rates {
		r := startRedis(t, "LD_PRELOAD="+lib, fmt.Sprintf("FASTCLOCK_RATE=%g", rate), "FASTCLOCK_JUMP_FILE="+jumpFile)
		checkClockRate(t, r, rate)
		urls = append(urls, r.url)
	}
	pay := startPayments(t, prov)

	env := map[string]string{
		"REDIS_URL":    urls[0],
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     clockTTL.String(),
		"LOCK_WAIT":    "5s",
		"PAYMENT_URL":  pay.url,
	}
	if f.lock == "redlock" {
		env["REDLOCK_URLS"] = strings.Join(urls, ",")
	}
	apis := []*instance{startAPI(t, env), startAPI(t, env)}
	sc := createScreening(t, apis[0].url, fmt.Sprintf(`{"movie":"Clock","rows":1,"seats_per_row":2,"lock":%q,"payment_delay_ms":%d}`,
		f.lock, clockPayment.Milliseconds()))

	const customers = 6
	paying := pay.chargeStarted(sc.ID)
	answers := make([]answer, customers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range customers {
		wg.Go(func() {
			answers[i] = book(t.Context(), apis[i%len(apis)].url, sc.ID, fmt.Sprintf("c%d", i), "A1")
		})
	}
	if f.jump != 0 {
		wait.Recv(t, paying, 30*time.Second, "the first holder's payment starts, for the clock to jump during it")
		if err := os.WriteFile(jumpFile, []byte(fmt.Sprint(f.jump.Seconds())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	wall := time.Since(start)

	statuses := checkStatuses(t, answers)
	confirmed := verify(t, answers, mergeSeatMaps(t, apis, sc.ID))
	stats := pay.checkCharges(t, confirmed, answers)
	switch {
	case f.overlaps && stats.Overlaps == 0:
		t.Errorf("no overlapping charges (%+v): the fault was meant to let two holders in", stats)
	case !f.overlaps && stats.Overlaps != 0:
		t.Errorf("%d overlapping charges (%+v): the lock should hold through this fault", stats.Overlaps, stats)
	}
	codes := map[string]int{}
	for _, a := range answers {
		if a.status != http.StatusCreated {
			codes[a.code]++
		}
	}
	t.Logf("row | %s | %s | 201: %d, refused: %v | %v |",
		f.name, pay.cell(stats), statuses[http.StatusCreated], codes, wall.Round(10*time.Millisecond))
}

// checkClockRate fails t unless the server's clock (TIME) runs at about
// rate times the real one: the fault must be in effect for the test to
// mean anything. Each reading of the server's clock is bracketed by two of
// the real one, so that the rate is known between two bounds; a busy
// machine, slow to answer or to schedule the test, widens them and never
// moves them off the true rate. The test fails only when even the bounds
// rule the rate out.
func checkClockRate(t *testing.T, r *redisServer, rate float64) {
	t.Helper()
	c := r.client(t)
	read := func() (before, server, after time.Time) {
		before = time.Now()
		server, err := c.Time(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return before, server, time.Now()
	}
	before0, t0, after0 := read()
	time.Sleep(300 * time.Millisecond) // the interval measured
	before1, t1, after1 := read()
	server := float64(t1.Sub(t0))
	fastest, slowest := server/float64(before1.Sub(after0)), server/float64(after1.Sub(before0))
	if slowest > rate*1.25 || fastest < rate*0.8 {
		t.Fatalf("redis-server's clock ran %.2fx to %.2fx the real one, want %gx", slowest, fastest, rate)
	}
}

// TestFencesAfterClockStepsBack books a seat and cancels it, then restarts
// Redis empty with its clock an hour behind (redis-server with the fast
// clock library preloaded, its wall clock set back): the fence counters
// are gone, and the tokens Redis issues from its clock are an hour older
// than the fence the seat's row keeps. The first booking of the seat is
// refused as stale (409 lock_lost), which is the proof that the fault is
// in effect; the refusal carries the seat's fence, the API raises the
// lock's counter past it, and the retry is booked. Without the raise every
// retry is refused for the hour the clock is behind. With a fence-checking
// payment provider the refusal is the provider's, before the write: it
// names the seat's fence too, and the API raises the counter the same way.
func TestFencesAfterClockStepsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	t.Run("fenced write", func(t *testing.T) { testFencesAfterClockStepsBack(t, nil) })
	t.Run("fence-checking provider", func(t *testing.T) {
		p := startPayments(t, fenceProvider)
		testFencesAfterClockStepsBack(t, p)
		if refused := p.Stats().RefusedStale; refused != 1 {
			t.Errorf("the provider refused %d charges as stale, want 1: the first booking after the restart", refused)
		}
	})
}

// testFencesAfterClockStepsBack is TestFencesAfterClockStepsBack, its API
// charging through p when p is not nil.
func testFencesAfterClockStepsBack(t *testing.T, p *payments) {
	lib := fastClockLibrary(t)
	jumpFile := filepath.Join(t.TempDir(), "jump")
	if err := os.WriteFile(jumpFile, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRedis(t, "LD_PRELOAD="+lib, "FASTCLOCK_JUMP_FILE="+jumpFile)
	env := map[string]string{"REDIS_URL": r.url, "DATABASE_URL": testenv.NewDatabase(t)}
	if p != nil {
		env["PAYMENT_URL"] = p.url
	}
	api := startAPI(t, env)
	sc := createScreening(t, api.url, `{"movie":"Clock back","rows":1,"seats_per_row":1}`)
	first := book(t.Context(), api.url, sc.ID, "before", "A1")
	if first.status != http.StatusCreated {
		t.Fatalf("booking before the fault: %v", first)
	}
	cancelBooking(t, api.url, first.booking.ID, first.booking.Token)

	if err := os.WriteFile(jumpFile, []byte("-3600"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.restartEmpty(t)
	if now, err := r.client(t).Time(t.Context()).Result(); err != nil || time.Until(now) > -59*time.Minute {
		t.Fatalf("redis-server's clock reads %v (%v), want about an hour behind %v", now, err, time.Now())
	}

	// The API's connections to the old server answer 503 until they are
	// replaced; every other answer counts.
	var answers []answer
	waitFor(t, 30*time.Second, "two answers but 503 to bookings of the seat after the restart, or a 201", func() bool {
		a := book(t.Context(), api.url, sc.ID, fmt.Sprintf("after-%d", len(answers)), "A1")
		if a.status == 0 || a.status == http.StatusServiceUnavailable {
			return false
		}
		answers = append(answers, a)
		return a.status == http.StatusCreated || len(answers) == 2
	})
	if answers[0].status != http.StatusConflict || answers[0].code != "lock_lost" {
		t.Errorf("first booking after the restart: %v, want 409 lock_lost (a token an hour old); was the clock set back?", answers[0])
	}
	if last := answers[len(answers)-1]; last.status != http.StatusCreated {
		t.Errorf("answers after the restart %v: want the retry booked (201), the fence counter raised past the seat's fence", answers)
	}
}
