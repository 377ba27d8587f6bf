package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// outageLockWait is LOCK_WAIT in the fault tests.
const outageLockWait = 5 * time.Second

// outageOnlyLockWait is LOCK_WAIT in the outage tests: an answer during an
// outage must come well before it, as it would not if the service waited
// for a lock it cannot have. It is long, so that a busy machine cannot
// stretch a prompt answer to half of it.
const outageOnlyLockWait = 30 * time.Second

// steadyBookings is how many bookings each load has confirmed before a
// fault, and after the recovery, in the fault tests: load in its stride,
// not just started.
const steadyBookings = 10

// load sends bookings from a few clients in a closed loop until stopped:
// one seat or two adjacent ones, anywhere in a 26x100 screening, so that
// some bookings collide and most do not.
type load struct {
	base, screeningID string

	mu      sync.Mutex // protects answers: appended by the clients, read by the test
	answers []answer

	stop     chan struct{} // closed by finish, once
	stopOnce sync.Once
	wg       sync.WaitGroup // the clients
}

// startLoad starts clients sending bookings to base; finish stops them.
func startLoad(base, screeningID string, clients int) *load {
	l := &load{base: base, screeningID: screeningID, stop: make(chan struct{})}
	for i := range clients {
		l.wg.Go(func() { l.client(i) })
	}
	return l
}

func (l *load) client(i int) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		row, num := 'A'+rune(rng.IntN(26)), 1+rng.IntN(99)
		seats := []string{fmt.Sprintf("%c%d", row, num)}
		if rng.IntN(4) == 0 {
			seats = append(seats, fmt.Sprintf("%c%d", row, num+1))
		}
		// Not the stop channel's context: a request in flight is let
		// finish, so that every answer is known and none is ambiguous.
		a := book(context.Background(), l.base, l.screeningID, fmt.Sprintf("client-%d-%d", i, n), seats...)
		l.mu.Lock()
		l.answers = append(l.answers, a)
		l.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // a client's pause between bookings: the load's shape
	}
}

// snapshot returns the answers so far.
func (l *load) snapshot() []answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

// finish stops the clients, waits for them and returns every answer. It
// may be called more than once.
func (l *load) finish() []answer {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	return l.snapshot()
}

// answeredBefore returns the answers that came before t.
func answeredBefore(answers []answer, t time.Time) []answer {
	var in []answer
	for _, a := range answers {
		if a.done.Before(t) {
			in = append(in, a)
		}
	}
	return in
}

// sentIn returns the answers to requests sent in [from, to).
func sentIn(answers []answer, from, to time.Time) []answer {
	var in []answer
	for _, a := range answers {
		if !a.sent.Before(from) && a.sent.Before(to) {
			in = append(in, a)
		}
	}
	return in
}

// p99 returns the 99th percentile latency of the answers.
func p99(answers []answer) time.Duration {
	if len(answers) == 0 {
		return 0
	}
	ls := make([]time.Duration, len(answers))
	for i, a := range answers {
		ls[i] = a.latency()
	}
	slices.Sort(ls)
	return ls[(len(ls)*99+99)/100-1]
}

// verify checks the final seat map against the answers: no seat confirmed
// to two bookings, every confirmed booking holding all its seats, and no
// seat held by a booking that nobody was told about. It returns the number
// of confirmed bookings.
func verify(t *testing.T, answers []answer, seats map[string]seat) int {
	t.Helper()
	return judge(t, answers, seats).confirmed
}

// verdict is what judge found: every count but confirmed fails the test.
type verdict struct {
	confirmed, double, lost, phantom, ambiguous int
}

// judge is verify, returning every count for the tests' rows.
func judge(t *testing.T, answers []answer, seats map[string]seat) verdict {
	t.Helper()
	confirmed := map[string]bool{}
	holder := map[string]string{}
	double, lost, phantom, ambiguous := 0, 0, 0, 0
	for _, a := range answers {
		if a.status == 0 {
			ambiguous++
			t.Errorf("no answer, so unknown whether it booked: %v", a)
		}
		if a.status != http.StatusCreated {
			continue
		}
		confirmed[a.booking.ID] = true
		for _, s := range a.booking.Seats {
			if other, ok := holder[s]; ok {
				double++
				t.Errorf("seat %s confirmed to bookings %s and %s", s, other, a.booking.ID)
			}
			holder[s] = a.booking.ID
			if seats[s].BookingID != a.booking.ID {
				lost++
				t.Errorf("confirmed booking %s lacks seat %s in the seat map (%+v)", a.booking.ID, s, seats[s])
			}
		}
	}
	for id, s := range seats {
		if s.BookingID != "" && !confirmed[s.BookingID] {
			phantom++
			t.Errorf("seat %s held by booking %s, which no client was told of", id, s.BookingID)
		}
	}
	t.Logf("verified %d answers: %d confirmed, %d double-booked seats, %d lost seats, %d phantom seats, %d without answer",
		len(answers), len(confirmed), double, lost, phantom, ambiguous)
	return verdict{len(confirmed), double, lost, phantom, ambiguous}
}

// outage is what an outage test varies: how the backend goes down and
// comes back.
type outage struct {
	api      *instance
	down, up func(t *testing.T)
	backend  string
	span     time.Duration // the outage's length
}

// runOutage puts load on the instance, takes the backend down, checks the
// answers and /readyz during the outage, brings it back, waits for a
// booking to succeed, and verifies the seat map against every answer.
func runOutage(t *testing.T, o outage) {
	t.Helper()
	s := createScreening(t, o.api.url, `{"movie":"Outage","rows":26,"seats_per_row":100,"payment_delay_ms":20}`)
	l := startLoad(o.api.url, s.ID, 4)
	defer l.finish() // a test that fails half-way still stops its clients

	confirmedAfter(t, []*load{l}, time.Time{}, steadyBookings, "bookings confirmed before the outage")
	o.down(t)
	downAt := time.Now()
	// A booking on the wire when the backend went down may have committed,
	// so its client waits while the service looks for it, until the
	// backend is back (reservation's Service.settle). When one batch
	// carried every client's booking, no client was left to send one
	// during the outage; clients that start with the outage send there
	// anyway.
	fresh := startLoad(o.api.url, s.ID, 4)
	defer fresh.finish()
	snapshot := func() []answer { return append(l.snapshot(), fresh.snapshot()...) }
	time.Sleep(o.span / 2) // the outage under test: half of it, then the rest
	if st := getStatus(o.api.url + "/readyz"); st != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the %s outage: %d, want 503", o.backend, st)
	}
	time.Sleep(o.span / 2)
	// The outage ends when the restart begins: the server may answer
	// before the command that starts it returns.
	upAt := time.Now()
	o.up(t)

	var recovered time.Time
	waitFor(t, 15*time.Second, "a booking sent after the restart succeeds", func() bool {
		for _, a := range sentIn(snapshot(), upAt, time.Now()) {
			if a.status == http.StatusCreated {
				recovered = a.done
				return true
			}
		}
		return false
	})
	confirmedAfter(t, []*load{l, fresh}, recovered, steadyBookings/2, "bookings confirmed after the recovery")
	answers := append(l.finish(), fresh.finish()...)
	if st := getStatus(o.api.url + "/readyz"); st != http.StatusOK {
		t.Errorf("/readyz after the %s outage: %d, want 200", o.backend, st)
	}

	// A booking sent near the end of the outage may be answered after the
	// restart, its Redis or Postgres calls retried into the new server: it
	// may then succeed. The outage's own answers are those sent and
	// answered while the backend was down.
	during := answeredBefore(sentIn(answers, downAt, upAt), upAt)
	if len(during) == 0 {
		t.Fatal("no booking was sent during the outage")
	}
	for _, a := range during {
		if a.status != http.StatusServiceUnavailable || a.code != "unavailable" {
			t.Errorf("booking sent during the %s outage got %v, want 503 unavailable", o.backend, a)
		}
	}
	p, worst := p99(during), slices.MaxFunc(during, func(a, b answer) int { return int(a.latency() - b.latency()) }).latency()
	t.Logf("%s outage %v: %d bookings before, %d during (p99 %v, max %v), recovered %v after the restart, %d after",
		o.backend, upAt.Sub(downAt).Round(time.Millisecond), len(sentIn(answers, time.Time{}, downAt)), len(during),
		p.Round(time.Millisecond), worst.Round(time.Millisecond), recovered.Sub(upAt).Round(time.Millisecond),
		len(sentIn(answers, upAt, time.Now())))
	// Well under the lock wait: an outage is answered at once, not after
	// waiting for a lock that cannot be had. (The figures are in
	// docs/reliability.md.)
	if p >= outageOnlyLockWait/2 {
		t.Errorf("p99 of the answers during the outage %v, want well under LOCK_WAIT %v", p, outageOnlyLockWait)
	}
	if n := verify(t, answers, seatMap(t, o.api.url, s.ID)); n == 0 {
		t.Error("nothing was booked at all")
	}
}

// TestRedisOutage kills the instance's Redis (a private redis-server) under
// load and starts it again on the same port.
func TestRedisOutage(t *testing.T) {
	faultTest(t)
	rs := startRedis(t)
	api := startAPI(t, map[string]string{
		"REDIS_URL":    rs.url,
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     "2s",
		"LOCK_WAIT":    outageOnlyLockWait.String(),
	})
	runOutage(t, outage{
		api: api, backend: "Redis", span: 3 * time.Second,
		down: rs.kill,
		up:   rs.start,
	})
}

// TestPostgresOutage stops the instance's Postgres (a private cluster) at
// once under load, and starts it again.
func TestPostgresOutage(t *testing.T) {
	testPostgresOutage(t, 0)
}

// TestPostgresOutageSlowBookings is TestPostgresOutage with a Postgres
// that takes 50 ms to write each booking, as a loaded machine's may: then
// the stop is likely to find every client's booking on the wire (all of
// them in one batch when an instance sends one batch at a time), and
// each such client waits for Postgres to come back. Before runOutage
// started clients with the outage, this failed 2 runs of 3 that way (no
// booking sent during the outage), as TestPostgresOutage did in
// go test -race ./... on a loaded machine.
func TestPostgresOutageSlowBookings(t *testing.T) {
	testPostgresOutage(t, 50*time.Millisecond)
}

// testPostgresOutage runs the Postgres outage with every booking's
// insert delayed by slow.
func testPostgresOutage(t *testing.T, slow time.Duration) {
	t.Helper()
	faultTest(t)
	pg := startPostgres(t)
	api := startAPI(t, map[string]string{
		"REDIS_URL":    testenv.RedisURL(t),
		"DATABASE_URL": pg.url,
		"LOCK_TTL":     "2s",
		"LOCK_WAIT":    outageOnlyLockWait.String(),
	})
	if slow > 0 { // the instance has created the tables
		pg.run(t, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", pg.url, "-c", fmt.Sprintf(`
CREATE FUNCTION slow_booking() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(%g); RETURN NEW; END $$;
CREATE TRIGGER slow_booking BEFORE INSERT ON bookings FOR EACH ROW EXECUTE FUNCTION slow_booking();`, slow.Seconds()))
	}
	runOutage(t, outage{
		api: api, backend: "Postgres", span: 3 * time.Second,
		down: pg.stop,
		up:   pg.start,
	})
}
