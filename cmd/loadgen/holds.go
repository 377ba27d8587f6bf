package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// The ticketing scenarios: how real cinemas sell seats.
//
//   - best: every request asks for the best 1 to 4 seats side by side
//     (POST .../bookings {"count":n,"adjacent":true}); a client refused
//     sold_out falls back to single seats, and stops when even one seat is
//     sold out. The run ends when the screening is sold out (or at
//     -requests / -duration).
//   - hold: every request holds the best 1 to 4 seats side by side, then
//     the client "pays" on its own side for about -payment-delay (0.5 to
//     1.5 times it, so that some payers are slower than the hold), and
//     confirms; the -abandon share of holds is never confirmed: the payer
//     walks away and the hold must expire by itself.
//
// Both run through the one driver (a ticketSender per client) and the one
// verification, so -payments, -faults, -watchers and the linearizability
// check work for them as for every scenario. The bookings verified are
// the 201s of best and the confirms of hold (a hold is not a booking: it
// may expire). Both also verify that no confirm was accepted after its
// hold expired, that every abandoned hold's seats are free again once it
// expired, and that a screening that refused a single seat as sold out has
// no free seat left.
const (
	scenarioHold = "hold"
	scenarioBest = "best"
)

// defaultHoldTTL is the hold length of the screening a hold run creates
// when -hold-ttl is not given: short, so that abandoned holds expire
// within the run's verification.
const defaultHoldTTL = 5 * time.Second

// maxExpiryWait bounds how long verification waits for the run's holds to
// expire; past it the abandoned holds are not checked (see holdCounts).
const maxExpiryWait = time.Minute

// holdCounts are the figures of the hold and best scenarios.
type holdCounts struct {
	// Held, Confirmed and Abandoned count holds made (201), confirmed
	// (201 to the confirm) and left to expire on purpose.
	Held      int `json:"held"`
	Confirmed int `json:"confirmed"`
	Abandoned int `json:"abandoned"`
	// ExpiredBeforeConfirm counts confirms refused 409 hold_expired: a
	// payer slower than the hold. Expected, not an error.
	ExpiredBeforeConfirm int `json:"expired_before_confirm"`
	// ConfirmErrors counts confirms answered anything else but 201 or
	// hold_expired (including no answer).
	ConfirmErrors int `json:"confirm_errors"`
	// ConfirmDelayMS are percentiles of the time from a hold's answer to
	// its confirm's answer, for confirmed holds.
	ConfirmDelayMS latencies `json:"confirm_delay_ms"`

	// ConfirmedAfterExpiry counts confirms accepted (201) although they
	// were sent after the hold's expires_at, or the booking was made at or
	// after it: a booking from an expired hold. A safety violation. (The
	// check compares loadgen's clock with the server's: on one host they
	// are one clock.)
	ConfirmedAfterExpiry int `json:"confirmed_after_expiry"`
	// AbandonedChecked is false when the holds would have expired too late
	// for verification to wait (past a minute); the next figure is then 0
	// and means nothing.
	AbandonedChecked bool `json:"abandoned_checked"`
	// AbandonedSeatsNotFreed counts seats of abandoned holds that are
	// still held once every hold of the run has expired. A violation.
	AbandonedSeatsNotFreed int `json:"abandoned_seats_not_freed"`

	// SoldOutSingles counts single-seat requests refused sold_out, and
	// SoldOutWithFreeSeats the free seats of the final map when there was
	// one (best only: nothing frees a seat there). A violation.
	SoldOutSingles       int `json:"sold_out_singles"`
	SoldOutWithFreeSeats int `json:"sold_out_with_free_seats"`
}

// holdRun is what one request of a hold or best run did, beyond its
// record.
type holdRun struct {
	count     int
	hold      holdAnswer // the hold of a 201 (hold scenario)
	heldAt    time.Time  // when the hold's answer arrived
	abandoned bool
	confirm   *record   // the confirm, when one was sent
	sentAt    time.Time // when the confirm was sent
	createdAt time.Time // the booking's created_at, of a 201 confirm
}

// holdAnswer is the part of the API's Hold that loadgen needs.
type holdAnswer struct {
	ID        string    `json:"id"`
	Seats     []string  `json:"seats"`
	ExpiresAt time.Time `json:"expires_at"`
	Token     string    `json:"token"`
}

// ticketSender is one client of the hold or best scenario (see above).
type ticketSender struct {
	client    *client
	scenario  string
	screening string
	targets   []string // a hold is confirmed on the target after the one that made it
	runID     string
	abandon   float64       // share of holds never confirmed
	pay       time.Duration // the client's own payment time, before a confirm

	single bool // refused sold_out for a group: asks for one seat from now on
}

func (s *ticketSender) send(ctx context.Context, start time.Time, target string, i int, rng *rand.Rand) (record, bool, error) {
	n := 1
	if !s.single {
		n = 1 + rng.IntN(4)
	}
	r := record{screening: s.screening, customer: customerName(s.runID, i), ticket: &holdRun{count: n}}
	r.sent = time.Since(start)
	if s.scenario == scenarioBest {
		var b booking
		r.answer = s.client.ticket(ctx, target+"/v1/screenings/"+s.screening+"/bookings", n, r.customer, "", &b)
		r.booking = b
	} else {
		r.answer = s.client.ticket(ctx, target+"/v1/screenings/"+s.screening+"/holds", n, r.customer, "", &r.ticket.hold)
	}
	r.done = time.Since(start)
	if r.confirmed() && s.scenario == scenarioHold {
		r.ticket.heldAt = time.Now()
		r.ticket.abandoned = rng.Float64() < s.abandon
		if !r.ticket.abandoned {
			// The confirm goes to the next instance: a hold must mean
			// the same on all of them.
			s.confirmHold(ctx, s.targets[(i+1)%len(s.targets)], rng, start, &r)
		}
	}
	if r.code != "sold_out" {
		return r, false, nil
	}
	if n == 1 && s.scenario == scenarioBest {
		return r, true, nil // sold out: this client is done
	}
	s.single = true
	if s.scenario == scenarioHold {
		// Held seats come back when their holds expire.
		sleep(ctx, 50*time.Millisecond)
	}
	return r, false, nil
}

// confirmHold pays on the client's side, then confirms the hold of r with
// its token, and notes the answer in r's ticket. The confirm's record
// names the hold's seats, so that one without an answer can be checked
// like any booking that may or may not have happened.
func (s *ticketSender) confirmHold(ctx context.Context, target string, rng *rand.Rand, start time.Time, r *record) {
	hr := r.ticket
	sleep(ctx, time.Duration(float64(s.pay)*(0.5+rng.Float64())))
	conf := record{screening: r.screening, seats: hr.hold.Seats, customer: r.customer}
	hr.sentAt = time.Now()
	conf.sent = time.Since(start)
	var b struct {
		booking
		CreatedAt time.Time `json:"created_at"`
	}
	conf.answer = s.client.post(ctx, target+"/v1/holds/"+hr.hold.ID+"/confirm", nil, hr.hold.Token, &b)
	conf.done = time.Since(start)
	conf.intended = conf.sent
	conf.booking, hr.createdAt = b.booking, b.CreatedAt
	hr.confirm = &conf
}

// ticketBookings returns the bookings of a hold or best run, which are
// verified like those of any run, and the figures of its holds: the 201s
// of best, the confirms of hold. For hold it first waits until every hold
// of the run has expired, so that the final seat map shows what expiry
// did.
func ticketBookings(ctx context.Context, scenario string, records []record) ([]record, *holdCounts) {
	hc := &holdCounts{}
	if scenario == scenarioBest {
		return records, hc
	}
	confirms := countHolds(hc, records)
	hc.AbandonedChecked = waitForExpiry(ctx, records)
	return confirms, hc
}

// countHolds fills in the hold figures and returns the confirms as the
// run's bookings.
func countHolds(hc *holdCounts, records []record) []record {
	var confirms []record
	var delays []time.Duration
	for _, rec := range records {
		hr := rec.ticket
		if hr == nil || hr.hold.ID == "" {
			continue
		}
		hc.Held++
		if hr.abandoned {
			hc.Abandoned++
			continue
		}
		r := hr.confirm
		confirms = append(confirms, *r)
		switch {
		case r.confirmed():
			hc.Confirmed++
			delays = append(delays, r.done-r.sent+hr.sentAt.Sub(hr.heldAt))
			if hr.sentAt.After(hr.hold.ExpiresAt) || !hr.createdAt.Before(hr.hold.ExpiresAt) {
				hc.ConfirmedAfterExpiry++
			}
		case r.code == "hold_expired":
			hc.ExpiredBeforeConfirm++
		default:
			hc.ConfirmErrors++
		}
	}
	hc.ConfirmDelayMS = percentiles(delays)
	return confirms
}

// waitForExpiry waits until every hold of the run has expired, so that
// the final map shows what expiry alone did. It returns false, without
// waiting, when that is more than maxExpiryWait away.
func waitForExpiry(ctx context.Context, records []record) bool {
	var last time.Time
	for _, r := range records {
		if r.ticket != nil && r.ticket.hold.ExpiresAt.After(last) {
			last = r.ticket.hold.ExpiresAt
		}
	}
	wait := time.Until(last) + 100*time.Millisecond
	if wait > maxExpiryWait {
		return false
	}
	sleep(ctx, wait)
	return ctx.Err() == nil
}

// checkTickets reads the final seat map of a hold, best or onsale run,
// checks it against the abandoned holds and the sold-out answers, and
// returns it.
func checkTickets(ctx context.Context, c *client, target string, s *screening, hc *holdCounts, scenario string, records []record) ([]seatState, error) {
	statuses, err := c.seats(ctx, target, s.ID)
	if err != nil {
		return nil, fmt.Errorf("reading the final seat map: %w", err)
	}
	checkFinal(hc, scenario, records, statuses)
	return statuses, nil
}

// checkFinal checks the final seat map against the abandoned holds and the
// sold-out answers.
func checkFinal(hc *holdCounts, scenario string, records []record, seats []seatState) {
	status := make(map[string]string, len(seats))
	free := 0
	for _, s := range seats {
		status[s.ID] = s.Status
		if s.Status == "free" {
			free++
		}
	}
	for _, r := range records {
		hr := r.ticket
		if hr == nil {
			continue
		}
		if hc.AbandonedChecked && hr.abandoned {
			for _, seat := range hr.hold.Seats {
				if status[seat] == "held" {
					hc.AbandonedSeatsNotFreed++
				}
			}
		}
		if r.code == "sold_out" && hr.count == 1 {
			hc.SoldOutSingles++
		}
	}
	if scenario == scenarioBest && hc.SoldOutSingles > 0 {
		hc.SoldOutWithFreeSeats = free
	}
}

// ticket asks for the best n seats side by side (a booking or a hold,
// by url) and decodes a 201 into out. token is the queue token of an
// admitted buyer (onsale), or empty.
func (c *client) ticket(ctx context.Context, url string, n int, customer, token string, out any) answer {
	body := struct {
		Count    int    `json:"count"`
		Adjacent bool   `json:"adjacent"`
		Customer string `json:"customer"`
	}{n, n > 1, customer}
	return c.post(ctx, url, body, token, out)
}

// post sends one POST (with a bearer token when given) and returns the
// answer, a 201 decoded into out. It never fails: whatever happened is in
// the answer, because every outcome has to be counted.
func (c *client) post(ctx context.Context, url string, in any, token string, out any) answer {
	return c.call(ctx, http.MethodPost, url, in, token, http.StatusCreated, out)
}

// call sends one request (with a bearer token when given) and returns the
// answer, decoding the body into out when the status is want.
func (c *client) call(ctx context.Context, method, url string, in any, token string, want int, out any) answer {
	var body io.Reader
	if in != nil {
		data, _ := json.Marshal(in)
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		// The status arrived but the body did not: for a 201 we cannot
		// tell what was made, so treat it like no answer at all.
		return answer{err: err}
	}
	a := answer{status: resp.StatusCode}
	if resp.StatusCode == want {
		if err := json.Unmarshal(data, out); err != nil {
			return answer{err: fmt.Errorf("%d without a readable body: %s", want, truncate(data))}
		}
		return a
	}
	var e apiError
	if json.Unmarshal(data, &e) == nil {
		a.code, a.taken = e.Error.Code, e.Error.Seats
	}
	return a
}

// percentiles summarizes durations in milliseconds.
func percentiles(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(int(q*float64(len(ds))), len(ds)-1)]) / float64(time.Millisecond)
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return latencies{P50: at(.5), P90: at(.9), P99: at(.99), P999: at(.999), Max: at(1),
		Mean: float64(sum) / float64(len(ds)) / float64(time.Millisecond)}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// writeHolds prints the hold figures of the text report.
func writeHolds(row func(name, format string, args ...any), h *holdCounts) {
	if h.Held > 0 {
		row("holds", "%d held, %d confirmed, %d abandoned, %d expired before their confirm, %d confirm errors",
			h.Held, h.Confirmed, h.Abandoned, h.ExpiredBeforeConfirm, h.ConfirmErrors)
		d := h.ConfirmDelayMS
		row("hold to booking", "p50 %s  p90 %s  p99 %s  max %s", fmtMS(d.P50), fmtMS(d.P90), fmtMS(d.P99), fmtMS(d.Max))
		row("confirmed after expiry", "%d", h.ConfirmedAfterExpiry)
		if h.AbandonedChecked {
			row("abandoned seats not freed", "%d (after every hold expired)", h.AbandonedSeatsNotFreed)
		} else {
			row("abandoned seats not freed", "not checked: the holds expire too late to wait for")
		}
	}
	row("sold out", "%d single-seat requests refused sold_out; %d free seats left then", h.SoldOutSingles, h.SoldOutWithFreeSeats)
}
