package faults

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/payment"
)

// pauseTTL is the lease in the pause tests: a pause longer than it makes
// the paused holder's lock run out.
const pauseTTL = time.Second

// pauseEnv is the environment of the instances of a pause test: a short
// lease, demo mode, so that guard=off can be shown, and the payment
// provider at paymentURL.
func pauseEnv(redisURL, databaseURL, paymentURL string) map[string]string {
	return map[string]string{
		"REDIS_URL":    redisURL,
		"DATABASE_URL": databaseURL,
		"LOCK_TTL":     pauseTTL.String(),
		"LOCK_WAIT":    "5s",
		"DEMO_MODE":    "true",
		"PAYMENT_URL":  paymentURL,
	}
}

// pauseRow logs the row of a pause case for the matrix in
// docs/reliability.md: the charges that overlapped during the case (A's,
// made while paused, and B's), and the seat confirmed to both or lost. It
// judges only the charges (every charge without a booking refunded):
// guard=off double-books on purpose. A booking of B's that
// B cancelled (bCancelled) is neither.
func pauseRow(t *testing.T, pay *payments, before payment.Stats, name string, a, b answer, bCancelled bool, holder string) {
	t.Helper()
	after := pay.Stats()
	standing := []answer{a}
	if !bCancelled {
		standing = append(standing, b)
	}
	double, lost, held := 0, 0, 0
	for _, g := range standing {
		if g.status == http.StatusCreated {
			held++
			if g.booking.ID != holder {
				lost++
			}
		}
	}
	if held == 2 {
		double = 1
	}
	// A charge whose booking was not confirmed, or was cancelled, is
	// settled by its payment's id: by A when it resumes, by the reconciler
	// for a cancel. Once settled, charges minus refunds is the bookings
	// that stand.
	unrefunded := (after.Charges - before.Charges) - (after.Refunds - before.Refunds) - int64(held)
	for deadline := time.Now().Add(20 * time.Second); unrefunded != 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		after = pay.Stats()
		unrefunded = (after.Charges - before.Charges) - (after.Refunds - before.Refunds) - int64(held)
	}
	if unrefunded != 0 {
		t.Errorf("%s: charges %d, refunds %d, bookings standing %d: %d charged without a booking, not settled within 20s",
			name, after.Charges-before.Charges, after.Refunds-before.Refunds, held, unrefunded)
	}
	during := payment.Stats{Overlaps: after.Overlaps - before.Overlaps, Charges: after.Charges - before.Charges,
		Refunds: after.Refunds - before.Refunds, RefusedStale: after.RefusedStale - before.RefusedStale}
	checkRefused(t, during, []answer{a, b})
	t.Logf("row | keyed+redis | holder paused past its lease, %s | %s, charged without a booking %d | double-booked %d, lost %d | A %v, B %v |",
		name, pay.cell(during), unrefunded, double, lost, a, b)
}

// waitOwnerChange waits until the seat's lock key holds a token other than
// old (a new holder), or fails t.
func waitOwnerChange(t *testing.T, rc *redis.Client, screeningID, seat, old string) {
	t.Helper()
	waitFor(t, 10*time.Second, "another holder takes "+seat, func() bool {
		v, err := rc.Get(context.Background(), lockKey(screeningID, seat)).Result()
		return err == nil && v != old
	})
}

// TestHolderPause is Kleppmann's scenario: instance A takes a seat's lock,
// checks the seat is free, and is stopped (SIGSTOP) in its payment for
// longer than its lease. Instance B takes the lock and books the seat.
// Then A is resumed.
//
// When A wakes up, its watchdog finds the lease gone and closes Lost
// before A's payment select returns; A aborts before its write, whatever
// the guard. That is what the Lost channel buys, and the subtests "paused
// in payment" show it for both guards.
//
// The dangerous case is a pause after that last check and before the
// write lands. The subtests "paused in the write" construct it without
// luck: A's Postgres connection goes through a proxy of the test, which
// holds A's bytes once its payment has started; A finishes the payment,
// passes the Lost check and sends its write, which the proxy keeps. A is
// then stopped past its lease, B books, A is resumed and the proxy lets
// the write through. Only the database can refuse it now: with
// guard=fence it does (A's fencing token is older than B's), with
// guard=off it does not, and the seat is confirmed to both.
//
// Under SEATLOCK_FAULT_MATRIX=1 every case runs with the plain payment
// provider and with the fence-checking one.
func TestHolderPause(t *testing.T) {
	faultTest(t)
	redisURL := testenv.RedisURL(t)
	database := testenv.NewDatabase(t)
	rc := testenv.RedisClient(t, redisURL)
	for _, prov := range providers() {
		rig := startPauseRig(t, redisURL, database, rc, prov)
		for _, guard := range []string{"fence", "off"} {
			t.Run(prov.subtest("paused in payment/guard="+guard), func(t *testing.T) { pausedInPayment(t, rig, guard) })
		}
		for _, tt := range pausedInWriteCases {
			name := "paused in the write/guard=" + tt.guard
			if tt.bCancels {
				name += "/B cancels"
			}
			t.Run(prov.subtest(name), func(t *testing.T) { pausedInWrite(t, rig, tt, strings.TrimPrefix(name, "paused ")) })
		}
	}
}

// pauseRig is what the cases of TestHolderPause share for one payment
// provider: instance A, which reaches Postgres through a gate proxy,
// instance B, which reaches it directly, the provider both charge through,
// and a client of their Redis.
type pauseRig struct {
	a, b  *instance
	proxy *gateProxy
	pay   *payments
	rc    *redis.Client
}

// startPauseRig starts a rig whose instances charge through a provider of
// the given kind; everything stops when t ends.
func startPauseRig(t *testing.T, redisURL, database string, rc *redis.Client, prov provider) *pauseRig {
	t.Helper()
	r := &pauseRig{proxy: startGateProxy(t, database), pay: startPayments(t, prov), rc: rc}
	// A's reconciler looks for due payments only once an hour, so that
	// what the closed proxy holds is A's booking, not a reconciler round.
	envA := pauseEnv(redisURL, r.proxy.url, r.pay.url)
	envA["RECONCILE_EVERY"] = "1h"
	r.a = startAPI(t, envA)
	r.b = startAPI(t, pauseEnv(redisURL, database, r.pay.url))
	return r
}

// pausedInPayment stops A in its payment, past its lease, while B books.
func pausedInPayment(t *testing.T, r *pauseRig, guard string) {
	before := r.pay.Stats()
	s := createScreening(t, r.b.url, `{"movie":"Pause","rows":1,"seats_per_row":4,"payment_delay_ms":2000,"guard":"`+guard+`"}`)
	pa := bookAsync(r.a.url, s.ID, "paused", "A1")
	owner := waitLocked(t, r.rc, s.ID, "A1")["A1"]
	time.Sleep(100 * time.Millisecond) // A has checked A1 and pays
	resume := pause(t, r.a)

	pb := bookAsync(r.b.url, s.ID, "live", "A1")
	waitOwnerChange(t, r.rc, s.ID, "A1", owner)
	gb := receive(t, pb, 15*time.Second)
	if gb.status != http.StatusCreated {
		t.Fatalf("B got %v, want 201", gb)
	}
	resume()
	ga := receive(t, pa, 15*time.Second)
	holder := seatMap(t, r.b.url, s.ID)["A1"].BookingID
	t.Logf("guard=%s, A paused in its payment: B %v, A %v, A1 held by %s", guard, gb, ga, who(holder, ga, gb))
	pauseRow(t, r.pay, before, "in payment, guard="+guard, ga, gb, false, holder)
	// On resume, two timers are due in A: its payment's and its
	// watchdog's lease deadline. Which goroutine runs first is up to the
	// scheduler, so A either sees Lost closed and aborts (409 lock_lost),
	// or writes.
	switch {
	case ga.status == http.StatusConflict && ga.code == "lock_lost":
		// The Lost channel saved it.
	case guard == "fence" && ga.status == http.StatusConflict && ga.code == "seat_taken":
		// The write went out and the guard refused it: the seat is not
		// free any more.
	case guard == "off" && ga.status == http.StatusCreated:
		// The write went out and nothing refused it: the seat is
		// confirmed to both, and B's booking lost it.
		if holder != ga.booking.ID {
			t.Errorf("A1 held by %s, want A's late booking (last writer wins)", who(holder, ga, gb))
		}
		return
	default:
		t.Fatalf("A got %v", ga)
	}
	if holder != gb.booking.ID {
		t.Errorf("A1 held by %s, want B's booking", who(holder, ga, gb))
	}
}

// pausedInWriteCase is a case of A paused with its write held.
type pausedInWriteCase struct {
	guard     string
	bCancels  bool   // B cancels before A's write lands: the seat is free again
	want      int    // A's status
	wantCode  string // A's error code
	wantOwner string // "A", "B" or "" (free)
}

var pausedInWriteCases = []pausedInWriteCase{
	// The seat is not free: the conditional write refuses A.
	{guard: "fence", want: http.StatusConflict, wantCode: "seat_taken", wantOwner: "B"},
	// The seat is free again, and only the fencing token tells A's write
	// from a legitimate one: B's lock was newer.
	{guard: "fence", bCancels: true, want: http.StatusConflict, wantCode: "lock_lost", wantOwner: ""},
	// Nothing refuses A: B's confirmed booking loses its seat.
	{guard: "off", want: http.StatusCreated, wantOwner: "A"},
	{guard: "off", bCancels: true, want: http.StatusCreated, wantOwner: "A"},
}

// pausedInWrite stops A with its write held by the proxy, past its lease,
// while B books (and, in some cases, cancels).
func pausedInWrite(t *testing.T, r *pauseRig, tt pausedInWriteCase, name string) {
	before := r.pay.Stats()
	s := createScreening(t, r.b.url, `{"movie":"Pause","rows":1,"seats_per_row":4,"payment_delay_ms":500,"guard":"`+tt.guard+`"}`)
	charging := r.pay.chargeStarted(s.ID)
	pa := bookAsync(r.a.url, s.ID, "paused", "A1")
	owner := waitLocked(t, r.rc, s.ID, "A1")["A1"]
	// A checks A1 and records its payment before it charges: once its
	// charge has reached the provider, the next statement A sends to
	// Postgres is its write.
	awaitPayment(t, charging, pa, "A")
	held := r.proxy.hold()
	t.Cleanup(r.proxy.release)
	// A's payment ends, it finds its lock held, and sends the write: the
	// proxy keeps it.
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("A sent nothing to Postgres within 5s of its payment")
	}
	resume := pause(t, r.a)

	gb := book(context.Background(), r.b.url, s.ID, "live", "A1")
	if gb.status != http.StatusCreated {
		t.Fatalf("B got %v, want 201", gb)
	}
	if v := r.rc.Get(context.Background(), lockKey(s.ID, "A1")).Val(); v == owner {
		t.Fatal("B booked while A's lock key was still A's")
	}
	if tt.bCancels {
		cancelBooking(t, r.b.url, gb.booking.ID, gb.booking.Token)
	}
	resume()
	r.proxy.release()
	ga := receive(t, pa, 15*time.Second)
	holder := seatMap(t, r.b.url, s.ID)["A1"].BookingID
	t.Logf("guard=%s, A paused in its write: B %v, A %v; A1 held by %s", tt.guard, gb, ga, who(holder, ga, gb))
	pauseRow(t, r.pay, before, name, ga, gb, tt.bCancels, holder)
	if ga.status != tt.want || ga.code != tt.wantCode {
		t.Errorf("A got %v, want %d %s", ga, tt.want, tt.wantCode)
	}
	want := map[string]string{"A": ga.booking.ID, "B": gb.booking.ID, "": ""}[tt.wantOwner]
	if holder != want {
		t.Errorf("A1 held by %s, want %q", who(holder, ga, gb), tt.wantOwner)
	}
}

// pause stops the instance (SIGSTOP) and returns the function that resumes
// it (SIGCONT); t's cleanup resumes it too, once.
func pause(t *testing.T, inst *instance) (resume func()) {
	t.Helper()
	inst.signal(t, syscall.SIGSTOP)
	var once sync.Once
	resume = func() { once.Do(func() { inst.signal(t, syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// who names the holder of a seat for the log: A's booking, B's, or none.
func who(holder string, a, b answer) string {
	switch {
	case holder == "":
		return "nobody"
	case holder == a.booking.ID:
		return "A"
	case holder == b.booking.ID:
		return "B"
	}
	return holder
}

// gateProxy is a TCP proxy in front of Postgres whose client-to-server
// direction can be held: bytes sent while held wait in the proxy until
// release. To the API it looks like a database that stopped answering.
type gateProxy struct {
	ln     net.Listener
	target string // host:port of Postgres
	url    string // the database URL through the proxy

	mu sync.Mutex // protects gate, arrived and conns
	// gate is nil while bytes flow; while held, a channel closed by
	// release.
	gate chan struct{}
	// arrived, while held, is closed when the first bytes arrive.
	arrived chan struct{}
	conns   []net.Conn

	wg sync.WaitGroup // the accept loop and every copier
}

// startGateProxy starts a proxy to the database of databaseURL, and stops
// it, closing every connection, when t ends.
func startGateProxy(t *testing.T, databaseURL string) *gateProxy {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gateProxy{ln: ln, target: u.Host}
	u.Host = ln.Addr().String()
	p.url = u.String()
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *gateProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			p.forward(s, c)
			s.Close()
		}()
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(c, s)
			c.Close()
		}()
	}
}

// forward copies src to dst, waiting at the gate before every chunk.
func (p *gateProxy) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate, arrived := p.gate, p.arrived
			if arrived != nil {
				close(arrived)
				p.arrived = nil
			}
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold starts keeping client bytes; the channel is closed when the first
// bytes arrive.
func (p *gateProxy) hold() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate, p.arrived = make(chan struct{}), make(chan struct{})
	return p.arrived
}

// release lets the kept bytes, and all that follow, through.
func (p *gateProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate)
	}
	p.gate, p.arrived = nil, nil
}

// close stops the proxy and waits for its goroutines.
func (p *gateProxy) close() {
	p.release()
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
