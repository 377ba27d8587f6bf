package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
)

// rotateEvery is how long the clients stay on one screening before they
// move to the next: it keeps each seat's history short enough for the
// linearizability checker, whatever the length of the run.
const rotateEvery = 15 * time.Second

// nemesisRun creates the screenings, runs the clients and the faults for
// cfg.total, waits for the ledger to settle and checks everything.
func nemesisRun(ctx context.Context, cfg nemesisConfig, c *cluster.Cluster, schedule []scheduledFault, fences *fenceLog, stderr io.Writer) (*nemesisReport, error) {
	cl := newClient(cfg.clients, nemesisInstances, 5*time.Second, "")
	defer cl.close()
	shows, err := nemesisScreenings(ctx, cl, c.APIs[0].URL, cfg)
	if err != nil {
		return nil, err
	}
	h := &history{start: time.Now()}
	loadCtx, cancel := context.WithTimeout(ctx, cfg.total)
	defer cancel()
	samples := sampleOverlaps(loadCtx, c, h.start)
	var wg sync.WaitGroup
	var ran []faultRecord
	wg.Go(func() { ran = (&nemesis{c: c, start: h.start, heal: ctx}).run(loadCtx, schedule) })
	apis := make([]string, len(c.APIs))
	for i, a := range c.APIs {
		apis[i] = a.URL
	}
	for i := range cfg.clients {
		nc := &nemesisClient{id: i, c: cl, h: h, apis: apis, shows: shows, rotate: rotateEvery,
			runID: newRunID(), rng: rand.New(rand.NewPCG(cfg.seed, uint64(i)+1))}
		wg.Go(func() { nc.run(loadCtx) })
	}
	wg.Wait()
	wall := time.Since(h.start)
	overlaps := <-samples
	fmt.Fprintf(stderr, "nemesis: %d operations in %v; settling the ledger\n", len(h.ops), wall.Round(time.Millisecond))
	for _, a := range c.APIs {
		if !a.Running() {
			if err := a.Start(ctx); err != nil {
				return nil, err
			}
		}
	}
	rep := &nemesisReport{Seed: cfg.seed, ScheduleSHA256: scheduleHash(schedule), DurationS: wall.Seconds(),
		Lock: cfg.lock, Guard: cfg.guard, Clients: cfg.clients, Instances: nemesisInstances,
		ReconcileEvery: cfg.reconcileEvery.String(), Faults: ran, Commit: cfg.commit}
	final, err := settle(ctx, cl, c, h, shows, cfg.settle, rep)
	if err != nil {
		return nil, err
	}
	for i := range h.ops {
		h.ops[i].Fences = fences.of(h.ops[i].Booking)
	}
	rep.check(h, final, overlaps, cfg.out, cfg.checkTimeout)
	rep.summarize(h, wall, ran)
	if err := h.write(cfg.out + "/history.jsonl"); err != nil {
		return nil, err
	}
	return rep, nil
}

// nemesisScreenings creates one screening per rotation of the run, with
// holds that outlast it (so that only the clients end a hold).
func nemesisScreenings(ctx context.Context, cl *client, base string, cfg nemesisConfig) ([]*screening, error) {
	delay, ttl := cfg.paymentDelay.Milliseconds(), int64(time.Hour/time.Millisecond)
	req := createScreening{Movie: "nemesis", Rows: 4, SeatsPerRow: 10, Lock: cfg.lock, Guard: cfg.guard, PaymentDelayMS: &delay, HoldTTLMS: &ttl}
	var shows []*screening
	for range int(cfg.total/rotateEvery) + 1 {
		s, err := create(ctx, cl, base, req)
		if err != nil {
			return nil, err
		}
		shows = append(shows, s)
	}
	return shows, nil
}

// sampleOverlaps reads the provider's overlap count every 100 ms until
// ctx ends, and then sends every sample on the channel.
func sampleOverlaps(ctx context.Context, c *cluster.Cluster, start time.Time) <-chan []overlapSample {
	out := make(chan []overlapSample, 1)
	// Owned by nemesisRun, which receives from out once ctx has ended.
	go func() {
		samples := []overlapSample{{at: 0, overlaps: c.Payments.Stats().Overlaps}}
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				out <- append(samples, overlapSample{at: time.Since(start), overlaps: c.Payments.Stats().Overlaps})
				return
			case <-tick.C:
				samples = append(samples, overlapSample{at: time.Since(start), overlaps: c.Payments.Stats().Overlaps})
			}
		}
	}()
	return out
}

// settle waits, at most wait, until the provider's charges minus refunds
// equal the bookings the seat maps show, and returns the last seat maps
// read. The ledger's figures go into rep.
func settle(ctx context.Context, cl *client, c *cluster.Cluster, h *history, shows []*screening, wait time.Duration, rep *nemesisReport) (finalState, error) {
	begin := time.Now()
	for {
		final, err := readFinal(ctx, cl, c.APIs[0].URL, h, shows)
		if err != nil && time.Since(begin) > wait {
			return final, err
		}
		st := c.Payments.Stats()
		rep.Charges, rep.Refunds, rep.Voids = st.Charges, st.Refunds, st.Voids
		rep.FinalBookings = countBookings(final)
		rep.LedgerOK = err == nil && st.Charges-st.Refunds == int64(rep.FinalBookings)
		rep.LedgerWaitS = time.Since(begin).Seconds()
		if err == nil && (rep.LedgerOK || time.Since(begin) > wait) {
			return final, nil
		}
		if !sleepUntil(ctx, time.Now().Add(500*time.Millisecond)) {
			return final, ctx.Err()
		}
	}
}

// countBookings is the number of distinct bookings on the final maps.
func countBookings(f finalState) int {
	ids := map[string]bool{}
	for _, id := range f.bookings {
		ids[id] = true
	}
	return len(ids)
}

// readFinal reads every screening's seat map and names each taken seat's
// holder in the model's terms.
func readFinal(ctx context.Context, cl *client, base string, h *history, shows []*screening) (finalState, error) {
	f := finalState{values: map[string]string{}, bookings: map[string]string{}, call: int64(time.Since(h.start))}
	customers := map[string]string{}
	for _, op := range h.ops {
		if op.Booking != "" {
			customers[op.Booking] = op.Customer
		}
	}
	var unnamed []string
	for _, s := range shows {
		seats, err := cl.seats(ctx, base, s.ID)
		if err != nil {
			return f, err
		}
		for _, st := range seats {
			key := seatKey(s.ID, st.ID)
			switch {
			case st.Status == "held":
				f.values[key] = "h:*"
			case st.Status == "booked":
				f.bookings[key] = st.BookingID
				if customers[st.BookingID] == "" {
					unnamed = append(unnamed, st.BookingID)
				}
			}
		}
	}
	f.done = int64(time.Since(h.start))
	owners := lookupOwners(ctx, cl, base, unnamed)
	for key, id := range f.bookings {
		f.values[key] = "b:" + cmp.Or(customers[id], owners[id], "*")
	}
	return f, nil
}
