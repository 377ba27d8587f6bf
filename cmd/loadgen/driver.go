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

// record is one booking request as loadgen saw it. Times are offsets from
// the start of the run, on the monotonic clock.
type record struct {
	screening string
	seats     []string
	customer  string // unique per request, so answers and seats can be attributed

	// intended is when the request should have been sent: in an open loop
	// the schedule says so, in a closed loop it equals sent. Latency is
	// measured from intended, so a server that falls behind an open-loop
	// schedule cannot hide its queue (coordinated omission).
	intended time.Duration
	sent     time.Duration // just before the request was written
	done     time.Duration // just after its answer was read

	answer
	ticket *holdRun  // what a request of hold, best or onsale did beyond its answer; nil for the others
	buyer  *buyerRun // the buyer of onsale whose hold request this is; nil for the others
}

// confirmed reports whether the server booked the seats (201).
func (r *record) confirmed() bool { return r.status == http.StatusCreated }

// ambiguous reports whether the request may or may not have booked its
// seats: no answer arrived (timeout, broken connection), or a 5xx did.
func (r *record) ambiguous() bool {
	return r.status == 0 || r.status >= http.StatusInternalServerError
}

// bookedSeats are the seats a confirmed booking holds: the server's list
// when it sent one, else the seats asked for.
func (r *record) bookedSeats() []string {
	if len(r.booking.Seats) > 0 {
		return r.booking.Seats
	}
	return r.seats
}

// latency is the time from the intended send to the answer.
func (r *record) latency() time.Duration { return r.done - r.intended }

// driver sends the requests of one run: it owns the clients, their
// schedule and their records; what one request is (a booking, a hold and
// its confirm, a GET /healthz) is the business of the scenario's sender.
type driver struct {
	targets []string // requests go round-robin over these
	pin     bool     // client c sends to target c mod len(targets), not request i to target i mod len
	clients int
	rate    float64 // requests per second; 0 = closed loop

	requests int           // stop after this many requests; 0 = no limit
	duration time.Duration // stop after this long; 0 = no limit

	// newSender returns the sender of client c, called once per client
	// goroutine.
	newSender func(c int) sender
	seed      uint64
	progress  func() // called after every request; safe for concurrent use
}

// sender sends the requests of one client of a run. Each client goroutine
// has its own, so a sender may keep what earlier answers taught it (best
// asks for single seats once a group was sold out) without a lock.
type sender interface {
	// send sends request i to target and returns its record, with sent
	// and done as offsets from start. stop reports that this client has
	// nothing more to send (the screening is sold out); an error, that
	// request i could not even be prepared.
	send(ctx context.Context, start time.Time, target string, i int, rng *rand.Rand) (r record, stop bool, err error)
}

// run sends requests until the limit is reached or ctx is done. It returns
// every request it sent, the start of the run (the origin of the records'
// times) and its wall time (start to last answer). An error means a request
// could not even be prepared (a fresh screening could not be created); the
// records so far are returned with it.
//
// Each client goroutine owns its own slice of records and its own random
// source, so the hot path takes no lock; run owns the goroutines and waits
// for all of them before it merges the slices.
func (d *driver) run(ctx context.Context) (records []record, start time.Time, wall time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		next    atomic.Int64 // number of the next request to send
		wg      sync.WaitGroup
		perConn = make([][]record, d.clients)

		// failOnce guards failErr: the first client that cannot go on
		// stores why and stops the others. It is read after wg.Wait.
		failOnce sync.Once
		failErr  error
	)
	start = time.Now()
	for c := range d.clients {
		wg.Go(func() {
			var err error
			perConn[c], err = d.loop(ctx, start, c, &next, rand.New(rand.NewPCG(d.seed, uint64(c))))
			if err != nil {
				failOnce.Do(func() { failErr = err; cancel() })
			}
		})
	}
	wg.Wait()

	for _, rs := range perConn {
		records = append(records, rs...)
		for _, r := range rs {
			wall = max(wall, r.done)
		}
	}
	return records, start, wall, failErr
}

// loop is client c: it takes the next request number, waits for its turn
// and sends it, until the run's limit, its sender or ctx ends it. It
// returns the records of its requests, and an error when one could not be
// prepared.
func (d *driver) loop(ctx context.Context, start time.Time, c int, next *atomic.Int64, rng *rand.Rand) ([]record, error) {
	var records []record
	s := d.newSender(c)
	for ctx.Err() == nil {
		i := int(next.Add(1) - 1)
		if d.requests > 0 && i >= d.requests {
			break
		}
		intended, ok := d.schedule(ctx, start, i)
		if !ok {
			break
		}
		target := d.targets[i%len(d.targets)]
		if d.pin {
			target = d.targets[c%len(d.targets)]
		}
		r, stop, err := s.send(ctx, start, target, i, rng)
		if err != nil {
			return records, err
		}
		r.intended = r.sent
		if d.rate > 0 {
			r.intended = intended
		}
		records = append(records, r)
		if d.progress != nil {
			d.progress()
		}
		if stop {
			break
		}
	}
	return records, nil
}

// bookingSender books the seats its picker chooses, for a customer name
// of its own per request.
type bookingSender struct {
	client *client
	picker picker
	runID  string // makes customer names unique across runs
}

func (s bookingSender) send(ctx context.Context, start time.Time, target string, i int, rng *rand.Rand) (record, bool, error) {
	t, err := s.picker.pick(ctx, i, rng)
	if err != nil {
		return record{}, false, err
	}
	r := record{screening: t.screening.ID, seats: t.seats, customer: customerName(s.runID, i)}
	r.sent = time.Since(start)
	r.answer = s.client.book(ctx, target, t.screening.ID, t.seats, r.customer)
	r.done = time.Since(start)
	return r, false, nil
}

// customerName is the customer of request i of a run: unique, so that
// each answer and each booked seat traces back to one request.
func customerName(runID string, i int) string { return fmt.Sprintf("lg-%s-%d", runID, i) }

// schedule decides when request i goes out. In a closed loop that is now,
// unless the run's time is up. In an open loop request i is due at
// start + i/rate whatever happened to the requests before it: the client
// sleeps until then, or sends at once when it is already late, and the
// lateness is part of the latency. It returns false when request i must
// not be sent.
func (d *driver) schedule(ctx context.Context, start time.Time, i int) (time.Duration, bool) {
	if d.rate == 0 {
		return 0, d.duration == 0 || time.Since(start) < d.duration
	}
	due := time.Duration(float64(i) / d.rate * float64(time.Second))
	if d.duration > 0 && due >= d.duration {
		return 0, false
	}
	wait := time.Until(start.Add(due))
	if wait <= 0 {
		return due, true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
		return due, true
	case <-ctx.Done():
		return 0, false
	}
}
