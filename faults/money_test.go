package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
)

// The money tests are three cases: a client that gives up just
// after the payment delay, a holder paused past its lease and its payment
// client's deadline, and a holder killed between its charge and its
// commit. Each judges the ledger after settling: the provider's charges
// less its refunds must equal the bookings confirmed in the database, and
// no payment of the case may still be open. They run with the plain
// provider and the fence-checking one, always: money is what the lock is
// for.

// moneyTTL is the lease of the money cases: short, so that a paused or
// killed holder's seat is free again soon.
const moneyTTL = 2 * time.Second

// settleMargin is how much longer than reservation.PaymentsSettleWithin a
// case waits for its ledger to settle: the reconcilers' rounds, the
// provider's answers and the test's polling on a shared machine.
const settleMargin = 5 * time.Second

// settleWithin bounds how long after a fault the money of a booking with
// the payment delay may stay unsettled: its payment comes due, and a
// reconciler's next round refunds or voids it.
func settleWithin(delay time.Duration) time.Duration {
	return reservation.PaymentsSettleWithin(delay, reservation.DefaultReconcileEvery) + settleMargin
}

// moneyProviders are the providers every money case runs against: both,
// whether or not SEATLOCK_FAULT_MATRIX is set.
func moneyProviders() []provider { return []provider{plainProvider, fenceProvider} }

// runMoneyCase runs a money case once per money provider, each a subtest
// named after what the case does. It is a fault test: skipped with -short.
func runMoneyCase(t *testing.T, name string, run func(t *testing.T, prov provider)) {
	t.Helper()
	faultTest(t)
	for _, prov := range moneyProviders() {
		t.Run(prov.subtest(name), func(t *testing.T) { run(t, prov) })
	}
}

// moneyRig is what one money case runs on: instances A and B on one Redis
// and one database, A reaching Postgres through a gate proxy that is open
// unless the case holds it, the provider both charge through, and a pool
// of the test's own on the database to count bookings and payments.
type moneyRig struct {
	a, b *instance
	gate *gateProxy
	pay  *payments
	db   *pgxpool.Pool
}

// startMoneyRig starts a rig whose instances wait at most lockWait for a
// seat lock; everything stops when t ends.
func startMoneyRig(t *testing.T, prov provider, lockWait time.Duration) *moneyRig {
	t.Helper()
	redisURL, database := testenv.RedisURL(t), testenv.NewDatabase(t)
	r := &moneyRig{pay: startPayments(t, prov), gate: startGateProxy(t, database)}
	env := func(databaseURL string) map[string]string {
		return map[string]string{
			"REDIS_URL":    redisURL,
			"DATABASE_URL": databaseURL,
			"LOCK_TTL":     moneyTTL.String(),
			"LOCK_WAIT":    lockWait.String(),
			"PAYMENT_URL":  r.pay.url,
		}
	}
	r.a = startAPI(t, env(r.gate.url))
	r.b = startAPI(t, env(database))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := pgxpool.New(ctx, database)
	if err != nil {
		t.Fatalf("pool of the test database: %v", err)
	}
	t.Cleanup(db.Close)
	r.db = db
	return r
}

// ledger is the money of a case's screenings at one moment: what the
// provider counted, the bookings confirmed and the payments still open in
// the database.
type ledger struct {
	payment.Stats
	confirmed int64
	// open lists the payments still pending or refunding, as
	// "id status seats customer".
	open []string
	// reconciled counts the payments settled once they were due: by a
	// reconciler, for the service settles its own before then.
	reconciled int64
}

// unowed is the charges that nobody booked or refunded; below zero, the
// bookings that nobody paid for.
func (l ledger) unowed() int64 { return l.Charges - l.Refunds - l.confirmed }

// settled reports whether the ledger balances with nothing left open.
func (l ledger) settled() bool { return l.unowed() == 0 && len(l.open) == 0 }

func (l ledger) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ledger: charges %d - refunds %d = %d, confirmed bookings %d", l.Charges, l.Refunds, l.Charges-l.Refunds, l.confirmed)
	switch d := l.unowed(); {
	case d > 0:
		fmt.Fprintf(&b, ": %d %s nobody booked or refunded", d, plural(d, "charge"))
	case d < 0:
		fmt.Fprintf(&b, ": %d %s nobody paid for", -d, plural(-d, "booking"))
	}
	b.WriteString("; open payments: ")
	if len(l.open) == 0 {
		b.WriteString("none")
	} else {
		b.WriteString(strings.Join(l.open, ", "))
	}
	return b.String()
}

// plural returns noun, with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// row is the ledger's part of a case's row for docs/reliability.md.
func (l ledger) row() string {
	verdict := "balanced"
	if !l.settled() {
		verdict = "**" + l.String() + "**"
	}
	return fmt.Sprintf("charges %d | refunds %d | voids %d | confirmed %d | overlaps %d | max concurrent %d | reconciled %d | %s",
		l.Charges, l.Refunds, l.Voids, l.confirmed, l.Overlaps, l.MaxConcurrent, l.reconciled, verdict)
}

// readLedger reads the ledger of the screenings: the database first, then
// the provider. A payment leaves the open statuses only after its charge
// is kept (in the booking's transaction) or given back at the provider,
// so no moment in between can look settled.
func (r *moneyRig) readLedger(t *testing.T, screenings ...string) ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var l ledger
	err := r.db.QueryRow(ctx, `SELECT count(*) FROM bookings WHERE screening_id = ANY($1) AND status = 'confirmed'`, screenings).Scan(&l.confirmed)
	if err != nil {
		t.Fatalf("counting confirmed bookings: %v", err)
	}
	rows, err := r.db.Query(ctx, `
		SELECT id::text, status, array_to_string(seats, ' '), customer FROM payments
		WHERE screening_id = ANY($1) AND status IN ('pending', 'refunding') ORDER BY created_at`, screenings)
	if err != nil {
		t.Fatalf("listing open payments: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, seats, customer string
		if err := rows.Scan(&id, &status, &seats, &customer); err != nil {
			t.Fatalf("listing open payments: %v", err)
		}
		l.open = append(l.open, fmt.Sprintf("%s %s %s %s", id, status, seats, customer))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("listing open payments: %v", err)
	}
	// A reconciler settles a payment in a transaction that found it due
	// (settle_after <= now()) and stamps it with the same now().
	err = r.db.QueryRow(ctx, `SELECT count(*) FROM payments WHERE screening_id = ANY($1) AND settled_at >= settle_after`, screenings).Scan(&l.reconciled)
	if err != nil {
		t.Fatalf("counting reconciled payments: %v", err)
	}
	l.Stats = r.pay.Stats()
	return l
}

// waitSettled polls the ledger of the screenings until it balances with
// nothing open, and fails t with the ledger's difference when that has not
// happened within settleWithin(delay) of the fault at from (or, when that
// has passed already, within a last two seconds).
func (r *moneyRig) waitSettled(t *testing.T, from time.Time, delay time.Duration, screenings ...string) ledger {
	t.Helper()
	deadline := from.Add(settleWithin(delay))
	if last := time.Now().Add(2 * time.Second); deadline.Before(last) {
		deadline = last
	}
	for {
		l := r.readLedger(t, screenings...)
		if l.settled() {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("money not settled %v after the fault (bound: the payment due, a reconciler round and %v of margin, %v): %v",
				time.Since(from).Round(time.Millisecond), settleMargin, settleWithin(delay), l)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// paymentStatuses returns the statuses of the payments of a screening,
// oldest first, with the booking each is for.
func (r *moneyRig) paymentStatuses(t *testing.T, screeningID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := r.db.Query(ctx, `SELECT status, booking_id::text FROM payments WHERE screening_id = $1 ORDER BY created_at`, screeningID)
	if err != nil {
		t.Fatalf("payments of %s: %v", screeningID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var status, bookingID string
		if err := rows.Scan(&status, &bookingID); err != nil {
			t.Fatalf("payments of %s: %v", screeningID, err)
		}
		out = append(out, status+" "+bookingID)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("payments of %s: %v", screeningID, err)
	}
	return out
}

// The hang-up case: hangUpRounds rounds, each with hangUpClients clients at
// once on hangUpSeats seats that nobody has tried yet, through both
// instances, every client giving up 205-300 ms after it sent its booking:
// just after the payment delay, while the winner of each seat pays or
// writes.
const (
	hangUpDelay   = 200 * time.Millisecond
	hangUpClients = 48
	hangUpRounds  = 10
	hangUpSeats   = 4
)

// TestMoneyHangUps: clients that give up a little after the payment delay,
// and no other fault. The charge belongs to the service, not to the
// client's connection: a hang-up neither cuts it off half-known (the
// booking is written, or the charge given back, all the same) nor frees
// the seat's lock while the charge is still running (an overlap, two
// holders paying for one seat).
func TestMoneyHangUps(t *testing.T) {
	runMoneyCase(t, "clients give up after the payment delay", runHangUps)
}

func runHangUps(t *testing.T, prov provider) {
	r := startMoneyRig(t, prov, 5*time.Second)
	s := createScreening(t, r.b.url, fmt.Sprintf(`{"movie":"Hang-ups","rows":1,"seats_per_row":%d,"payment_delay_ms":%d}`,
		hangUpRounds*hangUpSeats, hangUpDelay.Milliseconds()))
	bases := []string{r.a.url, r.b.url}

	var answers []answer
	for round := range hangUpRounds {
		got := make([]answer, hangUpClients)
		var wg sync.WaitGroup
		for i := range hangUpClients {
			// Client i books seat i mod hangUpSeats of the round, through
			// A or B in turn for each seat: the seat's contenders are on
			// both instances.
			seat := fmt.Sprintf("A%d", round*hangUpSeats+i%hangUpSeats+1)
			base := bases[(i/hangUpSeats)%2]
			giveUp := 205*time.Millisecond + rand.N(96*time.Millisecond)
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), giveUp)
				defer cancel()
				got[i] = book(ctx, base, s.ID, fmt.Sprintf("client-%d-%d", round, i), seat)
			})
		}
		wg.Wait() // every request ends by its client's 300 ms at most
		answers = append(answers, got...)
	}
	loadEnded := time.Now()

	created, hungUp := 0, 0
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated:
			created++
		case a.status == 0 && errors.Is(a.err, context.DeadlineExceeded):
			hungUp++
		case a.status == http.StatusConflict || a.status == http.StatusServiceUnavailable:
		default:
			t.Errorf("answer %v: want 201, 409, 503, or the client's own give-up", a)
		}
	}
	// The bookings still in flight when their clients gave up end within
	// their payment and write, and none leaves a payment open; the
	// bound is the reconciler's all the same.
	l := r.waitSettled(t, loadEnded, hangUpDelay, s.ID)
	// A seat has one booking in the seat map; every 201 must be it.
	seats := seatMap(t, r.b.url, s.ID)
	for _, a := range answers {
		if a.status == http.StatusCreated && seats[a.seats[0]].BookingID != a.booking.ID {
			t.Errorf("booking %s answered 201 for %s, which the seat map gives to %q", a.booking.ID, a.seats[0], seats[a.seats[0]].BookingID)
		}
	}
	t.Logf("%d requests: %d answered 201, %d hung up; %d bookings confirmed, %d of them to a client who had hung up",
		len(answers), created, hungUp, l.confirmed, l.confirmed-int64(created))
	t.Logf("row | clients give up 205-300 ms after sending, payment 200 ms | %s | %s |", prov.name, l.row())
	if l.Overlaps != 0 || l.MaxConcurrent > 1 {
		t.Errorf("%d overlapping charges (at most %d at once for one seat): a seat's lock was free while a charge for it ran", l.Overlaps, l.MaxConcurrent)
	}
	if l.reconciled != 0 {
		t.Errorf("%d payments were left to the reconciler: a hang-up cut their bookings short of writing or settling", l.reconciled)
	}
	// Without a booking confirmed to a client who had hung up, no charge
	// outlived its client, and the case showed nothing.
	if l.confirmed <= int64(created) {
		t.Errorf("%d bookings confirmed, %d answered 201: no booking outlived its client's give-up, the case tested nothing", l.confirmed, created)
	}
}

// The pause case: A's payment takes pausedDelay; it is stopped at its
// charge's start for pausedFor, past its lease (moneyTTL) and its payment
// client's deadline (the delay plus 5 s), but before its payment comes
// due for the reconciler (the delay plus 12 s).
const (
	pausedDelay = time.Second
	pausedFor   = 8 * time.Second
)

// TestMoneyHolderPaused: instance A is stopped (SIGSTOP) in its charge,
// past its lease and its payment client's deadline; instance B books the
// seat once A's lease has run out; A is resumed. A's charge went through at
// the provider while A was stopped, and A must not book with it: it
// answers 409 or 503, never 201, and its charge must be given back.
//
// Resumed before its payment comes due, A gives the charge back itself
// on its way out. Stopped until its payment comes due, A cannot: the
// reconciler of B must settle it while A is still stopped, and the ledger
// is checked then, and again once A has answered.
func TestMoneyHolderPaused(t *testing.T) {
	runMoneyCase(t, "resumed before its payment is due", func(t *testing.T, prov provider) { runHolderPaused(t, prov, false) })
	runMoneyCase(t, "stopped until its payment is due", func(t *testing.T, prov provider) { runHolderPaused(t, prov, true) })
}

func runHolderPaused(t *testing.T, prov provider, untilDue bool) {
	r := startMoneyRig(t, prov, 5*time.Second)
	s := createScreening(t, r.b.url, fmt.Sprintf(`{"movie":"Paused","rows":1,"seats_per_row":4,"payment_delay_ms":%d}`, pausedDelay.Milliseconds()))
	paying := r.pay.chargeStarted(s.ID)
	pa := bookAsync(r.a.url, s.ID, "paused", "A1")
	awaitPayment(t, paying, pa, "A's booking")
	resume := pause(t, r.a)
	stopped := time.Now()

	// B waits for A's lease to run out, then books and pays.
	gb := book(context.Background(), r.b.url, s.ID, "live", "A1")
	if gb.status != http.StatusCreated {
		t.Fatalf("B got %v, want 201 once A's lease ran out", gb)
	}
	if untilDue {
		// A is stopped all along: only a reconciler can settle its payment.
		l := r.waitSettled(t, stopped, pausedDelay, s.ID)
		t.Logf("A stopped %v: settled while it was, %v", time.Since(stopped).Round(time.Millisecond), l)
	} else {
		// The pause is the fault: past A's lease and its payment client's
		// deadline, short of its payment's due time.
		time.Sleep(time.Until(stopped.Add(pausedFor)))
	}
	resume()
	resumed := time.Now()
	ga := receive(t, pa, 15*time.Second)
	t.Logf("A stopped %v in its charge; B %v, A %v (%v after its resume)",
		resumed.Sub(stopped).Round(time.Millisecond), gb, ga, ga.done.Sub(resumed).Round(time.Millisecond))
	switch {
	case ga.status == http.StatusCreated:
		t.Errorf("A got %v for the seat B booked under a newer lock: want 409 or 503", ga)
	case ga.status == http.StatusConflict && (ga.code == "lock_lost" || ga.code == "seat_taken"):
	case ga.status == http.StatusServiceUnavailable:
	default:
		t.Errorf("A got %v, want 409 lock_lost (or seat_taken: its write refused) or 503", ga)
	}
	if holder := seatMap(t, r.b.url, s.ID)["A1"].BookingID; holder != gb.booking.ID {
		t.Errorf("A1 held by %s, want B's booking", who(holder, ga, gb))
	}
	l := r.waitSettled(t, stopped, pausedDelay, s.ID)
	name, reconciled := "A resumed after "+pausedFor.String(), int64(0)
	if untilDue {
		name, reconciled = "A stopped until its payment was due", 1
	}
	if l.reconciled != reconciled {
		t.Errorf("%d payments settled by a reconciler, want %d (A's, when it was stopped until its payment was due)", l.reconciled, reconciled)
	}
	t.Logf("row | holder paused in its charge, %s | %s | %s | A %v |", name, prov.name, l.row(), ga)
}

// killedDelay is the payment delay of the kill case.
const killedDelay = time.Second

// TestMoneyKilledBeforeCommit: instance A is killed (SIGKILL) after two
// of its bookings were charged and before either committed; the test's
// proxy holds A's writes to Postgres from the moment both charges started,
// so that "charged, not committed" is certain. Every request carries an
// Idempotency-Key. One customer retries the same request (same key, same
// body) on instance B until it is answered: 409 seat_busy while A's lease
// lasts, then 201. The retry must reuse the payment A recorded, so that
// the provider answers it with A's charge and charges nothing more. The
// other customer never retries: only the reconciler can give that
// charge back.
func TestMoneyKilledBeforeCommit(t *testing.T) {
	runMoneyCase(t, "one customer retries on B, one gives up", runKilledBeforeCommit)
}

func runKilledBeforeCommit(t *testing.T, prov provider) {
	// A retry waits a short while for the seat's lock, then is told
	// seat_busy and comes again.
	r := startMoneyRig(t, prov, 300*time.Millisecond)
	body := fmt.Sprintf(`{"movie":"Killed","rows":1,"seats_per_row":4,"payment_delay_ms":%d}`, killedDelay.Milliseconds())
	retried, abandoned := createScreening(t, r.b.url, body), createScreening(t, r.b.url, body)
	retryKey, abandonKey := uuid.NewString(), uuid.NewString()

	paying, payingToo := r.pay.chargeStarted(retried.ID), r.pay.chargeStarted(abandoned.ID)
	pr := bookKeyedAsync(r.a.url, retried.ID, "retrying", retryKey, "A1")
	pa := bookKeyedAsync(r.a.url, abandoned.ID, "giving-up", abandonKey, "A1")
	awaitPayment(t, paying, pr, "A's booking that will be retried")
	awaitPayment(t, payingToo, pa, "A's booking that will be abandoned")
	r.gate.hold() // from here on nothing A sends reaches Postgres
	waitFor(t, killedDelay+5*time.Second, "the provider made both of A's charges", func() bool {
		return r.pay.Stats().Charges == 2
	})
	for _, s := range []screening{retried, abandoned} {
		if st := seatMap(t, r.b.url, s.ID)["A1"]; st.Status != "free" {
			t.Fatalf("A1 of %s is %+v before the kill: a booking committed before the proxy held A's writes, so the case is not charged-but-not-committed", s.ID, st)
		}
	}
	r.a.kill(t)
	killed := time.Now()
	for _, p := range []<-chan answer{pr, pa} {
		if g := receive(t, p, 10*time.Second); g.status != 0 {
			t.Errorf("a client of the killed instance got %v, want no answer", g)
		}
	}

	// The retry, bounded: it must be booked before A's payment comes due
	// (the delay plus 12 s after it was recorded), or the case would not
	// be the one of a pending payment retried.
	retryUntil := killed.Add(10 * time.Second)
	var retries []answer
	for {
		g := bookKeyed(context.Background(), r.b.url, retried.ID, "retrying", retryKey, "A1")
		retries = append(retries, g)
		if g.status == http.StatusCreated {
			break
		}
		busy := (g.status == http.StatusConflict && g.code == "seat_busy") || g.status == http.StatusServiceUnavailable
		if !busy || time.Now().After(retryUntil) {
			t.Fatalf("retry %d on B got %v, %v after the kill: want 201, or 409 seat_busy or 503 until A's lease runs out",
				len(retries), g, time.Since(killed).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond) // the client's pause between retries
	}
	booked := retries[len(retries)-1]
	busy := 0
	for _, g := range retries[:len(retries)-1] {
		if g.code == "seat_busy" {
			busy++
		}
	}
	t.Logf("the retry was booked on B %v after the kill, at its try %d (%d seat_busy before)",
		booked.done.Sub(killed).Round(time.Millisecond), len(retries), busy)
	if c := r.pay.Stats().Charges; c != 2 {
		t.Errorf("%d charges after the retry, want A's 2: the retry charged the customer again", c)
	}

	l := r.waitSettled(t, killed, killedDelay, retried.ID, abandoned.ID)
	if holder := seatMap(t, r.b.url, retried.ID)["A1"].BookingID; holder != booked.booking.ID {
		t.Errorf("A1 of the retried screening held by %q, want the retry's booking %s", holder, booked.booking.ID)
	}
	if st := seatMap(t, r.b.url, abandoned.ID)["A1"]; st.Status != "free" {
		t.Errorf("A1 of the abandoned screening is %+v, want free", st)
	}
	// The retried customer paid once net: the ledger balances over both
	// screenings, with one booking, and the abandoned payment was given
	// back; the retried screening's payments are the one booked.
	want := []string{"booked " + booked.booking.ID}
	if got := r.paymentStatuses(t, retried.ID); !slices.Equal(got, want) {
		t.Errorf("payments of the retried booking: %v, want %v: the retry reuses A's payment", got, want)
	}
	if got := r.paymentStatuses(t, abandoned.ID); len(got) != 1 || !strings.HasPrefix(got[0], "refunded ") {
		t.Errorf("payments of the abandoned booking: %v, want one refunded", got)
	}
	if l.reconciled != 1 {
		t.Errorf("%d payments settled by a reconciler, want the abandoned one", l.reconciled)
	}
	t.Logf("row | holder killed between charge and commit, one retry on B, one abandoned | %s | %s | retry 201 after %d seat_busy |",
		prov.name, l.row(), busy)
}

// bookKeyedAsync is bookAsync with an Idempotency-Key.
func bookKeyedAsync(base, screeningID, customer, key string, seats ...string) <-chan answer {
	c := make(chan answer, 1)
	go func() { c <- bookKeyed(context.Background(), base, screeningID, customer, key, seats...) }()
	return c
}
