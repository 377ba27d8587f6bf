package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The onsale scenario: the day a popular screening goes on sale. -buyers
// arrive within -spike, far more than there are seats. Each is one request
// of the driver (one client per buyer), and does what a person does:
//
//  1. join the waiting room (POST .../queue), when the screening has one,
//     and ask about its entry (GET /v1/queue/{id}) after the eta_ms the
//     server gave, until admitted;
//  2. hold the best count seats, count from 1 to 4 (a group refused
//     sold_out asks for one seat at once; a single seat refused sold_out
//     is asked for again, about every -hold-ttl, as long as a hold of the
//     run has not yet expired: its seats may come back);
//  3. walk away from the hold with probability -abandon, else pay for
//     about -payment-delay on its own side and confirm on the next target.
//
// A buyer still waiting when every seat is confirmed goes home: the
// screening is sold out for good (nothing in this scenario cancels).
//
// The holds and their confirms are verified exactly as in the hold
// scenario (holds.go), through the one verification; on top of it the run
// reports what an on-sale is judged by: time to sell out, the wait in the
// queue, fairness, and the single seats left stranded.
const scenarioOnSale = "onsale"

// buyerRetries bounds how many more times a buyer refused a single seat
// (or answered 409 busy or 503) tries again before going home.
const buyerRetries = 10

// Polling of a queue entry: the server's eta_ms, within these bounds; with
// no eta_ms, from minPoll doubling up to maxPoll. maxPoll is well under the
// 60 s after which an entry not asked about leaves the queue.
const (
	minPoll = 50 * time.Millisecond
	maxPoll = 2 * time.Second
	maxEta  = 10 * time.Second
)

// maxBuyers bounds -buyers: each is a goroutine and a connection.
const maxBuyers = 20000

// defaultLayout is the rows x seats per row of the screening onsale
// creates when -layout is not given.
const defaultLayout = "10x20"

// buyerRun is what one buyer of an onsale run did. Times are offsets from
// the start of the run, on loadgen's monotonic clock.
type buyerRun struct {
	arrival time.Duration // when the buyer was due to arrive

	// The waiting room; all zero on a screening without one.
	joined      bool
	join        answer        // the answer to joining, when it was not 201
	joinSent    time.Duration // when the join was sent
	joinDone    time.Duration // when its answer arrived
	polls       int
	pollErrors  int
	lastWaiting time.Duration // when the last poll answered "not admitted" was sent
	admitted    time.Duration // when the first answer saying admitted arrived; 0 = never
	until       time.Time     // its admitted_until, when it gave one
	left        string        // why the buyer went home before holding, or ""
	leftAt      time.Duration // when

	// attempts are the buyer's hold requests, the last one the record the
	// driver got.
	attempts []record
}

// queueEntry is the API's queue entry.
type queueEntry struct {
	ID       string `json:"id"`
	Position int    `json:"position"`
	Admitted bool   `json:"admitted"`
	Token    string `json:"token"`
	EtaMS    int64  `json:"eta_ms"`
	// AdmittedUntil is when the admission ends, by the queue's clock:
	// admissions last equally long, so these order the admissions.
	AdmittedUntil time.Time `json:"admitted_until"`
}

// onsale is the shared state of the buyers of one run. Every client of the
// driver sends through it: its fields are set before the run and only read
// after, except the atomics and once.
type onsale struct {
	client    *client
	screening *screening
	queued    bool // the screening has a waiting room
	targets   []string
	runID     string
	buyers    int
	spike     time.Duration
	abandon   float64
	pay       time.Duration // the buyer's own payment time, before a confirm
	retry     time.Duration // about the pause before trying a refused hold again
	waitLimit time.Duration // the longest a buyer waits in the queue
	free      int           // seats free when the run began

	// confirmedSeats counts the seats of confirms answered 201. When it
	// reaches free, the screening is sold out for good: soldOutAt (an
	// offset from start, in nanoseconds) is set, and waiting buyers leave.
	confirmedSeats atomic.Int64
	soldOutAt      atomic.Int64
	// lastExpiry is the latest expires_at (Unix nanoseconds) of the holds
	// made so far: until then, held seats may come back.
	lastExpiry atomic.Int64

	// groupsOnce guards strandedMap and strandedRead: the seat map is
	// read once, by the first buyer refused a group as sold out, and
	// read only after the run (strandedOK says whether it was).
	groupsOnce   sync.Once
	strandedMap  []seatState
	strandedRead span
	strandedOK   atomic.Bool
	// before are the seats booked before the run.
	before seatMap
}

// send is buyer i: it waits for its arrival, queues, holds, and pays or
// walks away. Safe for concurrent use (see onsale).
func (o *onsale) send(ctx context.Context, start time.Time, target string, i int, rng *rand.Rand) (record, bool, error) {
	b := &buyerRun{arrival: o.arrival(i)}
	sleep(ctx, time.Until(start.Add(b.arrival)))
	customer := customerName(o.runID, i)
	token := ""
	if o.queued {
		if token = o.wait(ctx, start, i, customer, b); token == "" {
			return record{screening: o.screening.ID, customer: customer, buyer: b}, false, nil
		}
	}
	return o.buy(ctx, start, target, i, rng, customer, token, b), false, nil
}

// arrival is when buyer i arrives: the buyers are spread evenly over the
// spike, in the order of their numbers.
func (o *onsale) arrival(i int) time.Duration {
	return time.Duration(int64(o.spike) * int64(i) / int64(o.buyers))
}

// seatsMayReturn reports whether a hold of the run has not yet expired,
// by loadgen's clock with a little slack for the server's.
func (o *onsale) seatsMayReturn() bool {
	return time.Now().Before(time.Unix(0, o.lastExpiry.Load()).Add(100 * time.Millisecond))
}

// soldOut reports whether every seat free at the start is confirmed.
func (o *onsale) soldOut() bool { return o.soldOutAt.Load() != 0 }

// wait joins the queue and asks about the entry, on a different target
// each time (the queue must be one across instances), until it is
// admitted. It returns the queue token, or "" when the buyer went home
// (b.left says why).
func (o *onsale) wait(ctx context.Context, start time.Time, i int, customer string, b *buyerRun) string {
	var e queueEntry
	b.joinSent = time.Since(start)
	a := o.client.post(ctx, o.targets[i%len(o.targets)]+"/v1/screenings/"+o.screening.ID+"/queue",
		map[string]string{"customer": customer}, "", &e)
	b.joinDone = time.Since(start)
	if a.status != http.StatusCreated {
		b.join, b.left, b.leftAt = a, "join_refused", b.joinDone
		return ""
	}
	b.joined = true
	id, token, deadline, pause := e.ID, e.Token, time.Now().Add(o.waitLimit), minPoll
	for poll := 1; !e.Admitted; poll++ {
		if b.left = o.leaving(ctx, deadline); b.left != "" {
			b.leftAt = time.Since(start)
			return ""
		}
		if e.EtaMS > 0 {
			pause = min(max(time.Duration(e.EtaMS)*time.Millisecond, minPoll), maxEta)
		}
		sleep(ctx, pause)
		pause = min(2*pause, maxPoll)
		sent := time.Since(start)
		e = queueEntry{}
		a := o.client.call(ctx, http.MethodGet, o.targets[(i+poll)%len(o.targets)]+"/v1/queue/"+id, nil, token, http.StatusOK, &e)
		b.polls++
		switch {
		case a.status != http.StatusOK:
			b.pollErrors++
			e.Admitted = false
		case !e.Admitted:
			b.lastWaiting = sent
		}
	}
	b.admitted, b.until = time.Since(start), e.AdmittedUntil
	return token
}

// leaving says why a waiting buyer goes home now, or "".
func (o *onsale) leaving(ctx context.Context, deadline time.Time) string {
	switch {
	case o.soldOut():
		return "sold_out"
	case ctx.Err() != nil:
		return "cancelled"
	case time.Now().After(deadline):
		return "wait_limit"
	}
	return ""
}

// buy holds the best count seats for buyer i, trying again after a
// refusal that may pass, then walks away or pays and confirms. It returns
// the last hold request as the buyer's record.
func (o *onsale) buy(ctx context.Context, start time.Time, target string, i int, rng *rand.Rand, customer, token string, b *buyerRun) record {
	n := 1 + rng.IntN(4)
	url := target + "/v1/screenings/" + o.screening.ID + "/holds"
	for try := 0; ; try++ {
		r := record{screening: o.screening.ID, customer: customer, ticket: &holdRun{count: n}, buyer: b}
		r.sent = time.Since(start)
		r.answer = o.client.ticket(ctx, url, n, customer, token, &r.ticket.hold)
		r.done = time.Since(start)
		r.intended = r.sent
		if r.confirmed() {
			o.held(ctx, start, i, rng, &r)
		}
		b.attempts = append(b.attempts, r)
		switch {
		case r.confirmed() || !retryable(r):
			return r
		case r.code == "sold_out" && n > 1:
			o.groupsOnce.Do(func() { o.readStranded(ctx, start) })
			n = 1 // a group is gone: one seat, at once
			continue
		case try >= buyerRetries || o.soldOut() || ctx.Err() != nil:
			return r
		case r.code == "sold_out" && !o.seatsMayReturn():
			return r
		}
		sleep(ctx, time.Duration(float64(o.retry)*(0.5+rng.Float64())))
	}
}

// retryable reports whether a refused hold may succeed later: seats held
// by others come back when their holds expire, a busy seat is free again,
// a backend comes back.
func retryable(r record) bool {
	switch {
	case r.status == http.StatusConflict:
		return r.code == "sold_out" || r.code == "seat_busy" || r.code == "seat_held" || r.code == "seat_taken"
	case r.ambiguous():
		return true
	}
	return false
}

// held is what a buyer does with a hold: walk away, or pay and confirm it
// on the next target. A confirmed hold counts towards sold out.
func (o *onsale) held(ctx context.Context, start time.Time, i int, rng *rand.Rand, r *record) {
	r.ticket.heldAt = time.Now()
	for exp := r.ticket.hold.ExpiresAt.UnixNano(); ; {
		last := o.lastExpiry.Load()
		if exp <= last || o.lastExpiry.CompareAndSwap(last, exp) {
			break
		}
	}
	if r.ticket.abandoned = rng.Float64() < o.abandon; r.ticket.abandoned {
		return
	}
	payer := ticketSender{client: o.client, pay: o.pay}
	payer.confirmHold(ctx, o.targets[(i+1)%len(o.targets)], rng, start, r)
	if !r.ticket.confirm.confirmed() {
		return
	}
	seats := int64(len(r.ticket.hold.Seats))
	if o.confirmedSeats.Add(seats) >= int64(o.free) {
		o.soldOutAt.CompareAndSwap(0, int64(max(r.ticket.confirm.done, 1)))
	}
}

// readStranded reads the seat map at the moment groups are sold out, for
// its stranded single seats (stranded.go). A map that cannot be read
// leaves them to the final map.
func (o *onsale) readStranded(ctx context.Context, start time.Time) {
	sent := time.Since(start)
	seats, err := o.client.seats(ctx, o.targets[0], o.screening.ID)
	if err != nil {
		return
	}
	o.strandedMap, o.strandedRead = seats, span{sent, time.Since(start)}
	o.strandedOK.Store(true)
}

// strandedSingles counts the free seats that are alone in their row:
// each neighbour taken (booked or held) or the row's end.
func strandedSingles(seats []seatState) int {
	type place struct {
		row    byte
		number int
	}
	free := map[place]bool{}
	for _, s := range seats {
		var p place
		if _, err := fmt.Sscanf(s.ID, "%c%d", &p.row, &p.number); err == nil && s.Status == "free" {
			free[p] = true
		}
	}
	n := 0
	for p := range free {
		if !free[place{p.row, p.number - 1}] && !free[place{p.row, p.number + 1}] {
			n++
		}
	}
	return n
}

// parseLayout reads -layout: "ROWSxSEATS", within the API's limits.
func parseLayout(s string) (rows, seatsPerRow int, err error) {
	if _, err := fmt.Sscanf(s, "%dx%d", &rows, &seatsPerRow); err != nil || fmt.Sprintf("%dx%d", rows, seatsPerRow) != s {
		return 0, 0, usagef("-layout %q: want ROWSxSEATS, such as 10x20", s)
	}
	if rows < 1 || rows > maxRows || seatsPerRow < 1 || seatsPerRow > maxSeatsPerRow {
		return 0, 0, usagef("-layout %q: want 1 to %d rows of 1 to %d seats", s, maxRows, maxSeatsPerRow)
	}
	return rows, seatsPerRow, nil
}

// onsaleFlags checks the flags of the onsale scenario, and that no other
// scenario is given them. set names the flags given.
func onsaleFlags(cfg *config, layout string, set map[string]bool) error {
	if cfg.scenario != scenarioOnSale {
		for _, f := range []string{"buyers", "spike", "queue-rate", "layout"} {
			if set[f] {
				return usagef("-%s: only the onsale scenario has buyers, not %s", f, cfg.scenario)
			}
		}
		return nil
	}
	// One client per buyer, one request each: the driver's own limits
	// would only cut the on-sale short.
	for _, f := range []string{"clients", "requests", "duration"} {
		if set[f] {
			return usagef("-%s: the onsale scenario sends one client per buyer; use -buyers", f)
		}
	}
	switch {
	case cfg.screening != "" && (set["queue-rate"] || set["layout"]):
		return usagef("-queue-rate, -layout: they describe the screening onsale creates, not the -screening given")
	case cfg.buyers < 0 || cfg.buyers > maxBuyers:
		return usagef("-buyers %d: want 1 to %d (0 = ten per seat)", cfg.buyers, maxBuyers)
	case cfg.spike < 0:
		return usagef("-spike %v: must not be negative", cfg.spike)
	case cfg.queueRate < 0 || cfg.queueRate > 10000:
		return usagef("-queue-rate %d: want 1 to 10000 buyers a second, or 0 for no waiting room", cfg.queueRate)
	}
	var err error
	if cfg.rows, cfg.seatsPerRow, err = parseLayout(layout); err != nil {
		return err
	}
	if cfg.buyers == 0 && cfg.screening == "" {
		cfg.buyers = 10 * cfg.rows * cfg.seatsPerRow
	}
	cfg.clients, cfg.requests, cfg.stopByRequests = max(cfg.buyers, 1), max(cfg.buyers, 1), true
	return nil
}

// newOnsale returns the shared state of the buyers of a run on screening
// s, whose seats before the run were before. With -screening the buyers
// are counted from its seats only now: cfg's clients and requests follow.
func newOnsale(c *client, s *screening, before seatMap, cfg *config, runID string) *onsale {
	if s.Queue == nil && cfg.queueRate > 0 {
		s.Queue = &queueSettings{AdmitPerS: cfg.queueRate} // a server that does not echo it
	}
	free := s.capacity()
	for _, booking := range before {
		if booking != "" {
			free--
		}
	}
	if cfg.buyers == 0 {
		cfg.buyers = max(10*s.capacity(), 1)
		cfg.clients, cfg.requests = cfg.buyers, cfg.buyers
	}
	o := &onsale{
		client: c, screening: s, queued: s.Queue != nil, targets: cfg.targets, runID: runID,
		buyers: cfg.buyers, spike: cfg.spike, abandon: cfg.abandon, pay: cfg.paymentDelay,
		retry: max(cfg.holdTTL, time.Second), free: free, waitLimit: cfg.spike + time.Minute,
		before: before,
	}
	if o.queued && s.Queue.AdmitPerS > 0 {
		// Long enough for every buyer to be admitted, and then some.
		o.waitLimit += 2 * time.Duration(float64(cfg.buyers)/float64(s.Queue.AdmitPerS)*float64(time.Second))
	}
	return o
}
