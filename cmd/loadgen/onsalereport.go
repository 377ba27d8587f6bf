package main

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"time"
)

// onsaleCounts are the figures of an onsale run: the report's "onsale"
// field (docs/loadgen.md).
type onsaleCounts struct {
	Buyers int `json:"buyers"`
	// QueueAdmitPerS is the pace of the screening's waiting room; 0 when
	// it has none and every buyer races for holds.
	QueueAdmitPerS int `json:"queue_admit_per_s"`
	// Capacity is the seats free when the run began, and ConfirmedSeats
	// the seats of the confirms answered 201: never more than Capacity
	// (OverCapacity counts the excess, a violation).
	Capacity       int  `json:"capacity"`
	ConfirmedSeats int  `json:"confirmed_seats"`
	OverCapacity   int  `json:"over_capacity"`
	SoldOut        bool `json:"sold_out"`
	// SellOutS is the time from the run's start (the first arrival) to
	// the answer of the confirm that took the last free seat; 0 when the
	// run did not sell out. SeatsPerS is ConfirmedSeats over it (over the
	// run's wall time when not sold out).
	SellOutS  float64 `json:"sell_out_s"`
	SeatsPerS float64 `json:"seats_per_s"`

	// The waiting room: buyers that joined it, were admitted, and the
	// time from joining to the answer that said admitted.
	Joined      int       `json:"joined"`
	Admitted    int       `json:"admitted"`
	QueueWaitMS latencies `json:"queue_wait_ms"`
	Polls       int       `json:"polls"`
	PollErrors  int       `json:"poll_errors"`
	// Left counts the buyers that went home before asking for seats, by
	// why: sold_out (every seat confirmed while they waited),
	// join_refused, wait_limit, cancelled.
	Left map[string]int `json:"left,omitempty"`

	// HoldRequests are every hold request of the buyers; Refused those
	// not answered 201, and Contention those refused because another
	// request had the seat (409 seat_busy or seat_held).
	HoldRequests int `json:"hold_requests"`
	Refused      int `json:"refused"`
	Contention   int `json:"lock_contention"`
	// BuyersWithSeats counts the buyers that got a hold.
	BuyersWithSeats int `json:"buyers_with_seats"`

	// FIFOInversions counts buyers admitted before someone who had joined
	// the queue before them (whose join was answered before this buyer's
	// was sent): that one was told to wait by a poll sent after this
	// buyer's admission arrived, or its admitted_until is later. Joins
	// that overlap have no order, so a count above 0 is certain.
	FIFOInversions int `json:"fifo_inversions"`
	// ServedOutOfOrder counts buyers that got a hold although a buyer
	// who came before them got none (whose first request, the join or the
	// first hold, was answered before theirs was sent): fairness with or
	// without a queue.
	ServedOutOfOrder int `json:"served_out_of_order"`

	// StrandedSingleSeats are the free seats alone in their row (each
	// neighbour taken, or the row's end) in the seat map read when the
	// first group was refused sold_out (StrandedAt "groups_sold_out"), or
	// in the final map when none was ("end").
	StrandedSingleSeats int    `json:"stranded_single_seats"`
	StrandedAt          string `json:"stranded_at"`
	// StrandedCauses counts those seats by why they were alone
	// (stranded.go): before, came_back, concurrent, unknown, no_choice,
	// avoidable. StrandedAvoidable is the avoidable ones: left alone by a
	// request that certainly had a choice of its count that left none,
	// against the rule of best available; above 0 fails the run.
	StrandedCauses    map[string]int `json:"stranded_causes"`
	StrandedAvoidable int            `json:"stranded_avoidable"`
}

// holdAttempts are every hold request of the buyers of an onsale run, in
// the order of the buyers: the requests verified, summarized and put on
// the timeline.
func holdAttempts(buyers []record) []record {
	var out []record
	for _, r := range buyers {
		if r.buyer != nil {
			out = append(out, r.buyer.attempts...)
		}
	}
	return out
}

// onsaleFigures computes the figures of an onsale run from its buyers
// (the driver's records), the shared state o and the final seat map.
func onsaleFigures(o *onsale, buyers []record, final []seatState, wall time.Duration) *onsaleCounts {
	oc := &onsaleCounts{Buyers: len(buyers), Capacity: o.free, Left: map[string]int{}}
	if o.screening.Queue != nil {
		oc.QueueAdmitPerS = o.screening.Queue.AdmitPerS
	}
	var waits []time.Duration
	for _, r := range buyers {
		b := r.buyer
		if b.joined {
			oc.Joined++
			oc.Polls += b.polls
			oc.PollErrors += b.pollErrors
		}
		if b.joined && b.admitted > 0 {
			oc.Admitted++
			waits = append(waits, b.admitted-b.joinSent)
		}
		if b.left != "" {
			oc.Left[b.left]++
		}
		if b.gotSeats() {
			oc.BuyersWithSeats++
		}
		for _, a := range b.attempts {
			oc.HoldRequests++
			if a.confirmed() {
				if c := a.ticket.confirm; c != nil && c.confirmed() {
					oc.ConfirmedSeats += len(a.ticket.hold.Seats)
				}
				continue
			}
			oc.Refused++
			if a.status == http.StatusConflict && (a.code == "seat_busy" || a.code == "seat_held") {
				oc.Contention++
			}
		}
	}
	oc.QueueWaitMS = percentiles(waits)
	oc.OverCapacity = max(oc.ConfirmedSeats-oc.Capacity, 0)
	oc.SeatsPerS = float64(oc.ConfirmedSeats) / wall.Seconds()
	if at := o.soldOutAt.Load(); at != 0 {
		oc.SoldOut, oc.SellOutS = true, time.Duration(at).Seconds()
		oc.SeatsPerS = float64(oc.ConfirmedSeats) / oc.SellOutS
	}
	oc.FIFOInversions = fifoInversions(buyers)
	oc.ServedOutOfOrder = servedOutOfOrder(buyers)
	stranded, read, at := o.strandedMap, o.strandedRead, "groups_sold_out"
	if !o.strandedOK.Load() {
		stranded, read, at = final, span{wall, never}, "end"
	}
	world := newStrandWorld(o.screening.Rows, o.screening.SeatsPerRow, o.before, holdAttempts(buyers))
	oc.StrandedSingleSeats, oc.StrandedAt = strandedSingles(stranded), at
	oc.StrandedCauses = world.strandCauses(stranded, read)
	oc.StrandedAvoidable = oc.StrandedCauses[strandAvoidable]
	return oc
}

// gotSeats reports whether the buyer got a hold.
func (b *buyerRun) gotSeats() bool {
	return slices.ContainsFunc(b.attempts, func(r record) bool { return r.confirmed() })
}

// fifoInversions counts the admitted buyers b for which some buyer a
// joined first (a's join answered before b's was sent) and yet was
// admitted after b: a poll sent after b's admission arrived told a to
// wait, or a's admitted_until is later than b's (admissions of a
// screening last equally long, by one clock, the queue's).
func fifoInversions(buyers []record) int {
	var joined []*buyerRun
	for _, r := range buyers {
		if r.buyer.joined {
			joined = append(joined, r.buyer)
		}
	}
	sort.Slice(joined, func(i, j int) bool { return joined[i].joinDone < joined[j].joinDone })
	// waited[k] is the latest "still waiting" poll, and until[k] the
	// latest admitted_until, among the first k+1 buyers to have joined.
	waited := make([]time.Duration, len(joined))
	until := make([]time.Time, len(joined))
	for k, b := range joined {
		waited[k], until[k] = b.lastWaiting, b.until
		if k > 0 {
			waited[k] = max(waited[k], waited[k-1])
			if until[k-1].After(until[k]) {
				until[k] = until[k-1]
			}
		}
	}
	n := 0
	for _, b := range joined {
		if b.admitted == 0 {
			continue
		}
		before := sort.Search(len(joined), func(k int) bool { return joined[k].joinDone >= b.joinSent })
		if before == 0 {
			continue
		}
		if waited[before-1] > b.admitted || (!b.until.IsZero() && until[before-1].After(b.until)) {
			n++
		}
	}
	return n
}

// servedOutOfOrder counts the buyers that got a hold although a buyer who
// came to the shop before them got none. A buyer comes with its first
// request (the join, or the first hold without a waiting room), and came
// before another when that request was answered before the other's was
// sent: requests that overlap have no order.
func servedOutOfOrder(buyers []record) int {
	var came []*buyerRun
	for _, r := range buyers {
		if _, _, ok := r.buyer.came(); ok {
			came = append(came, r.buyer)
		}
	}
	done := func(b *buyerRun) time.Duration { _, d, _ := b.came(); return d }
	sort.Slice(came, func(i, j int) bool { return done(came[i]) < done(came[j]) })
	// missed[k] says whether one of the first k+1 buyers got nothing.
	missed := make([]bool, len(came))
	for k, b := range came {
		missed[k] = !b.gotSeats() || (k > 0 && missed[k-1])
	}
	n := 0
	for _, b := range came {
		sent, _, _ := b.came()
		before := sort.Search(len(came), func(k int) bool { return done(came[k]) >= sent })
		if b.gotSeats() && before > 0 && missed[before-1] {
			n++
		}
	}
	return n
}

// came returns when the buyer's first request was sent and answered, and
// false when it sent none.
func (b *buyerRun) came() (sent, done time.Duration, ok bool) {
	switch {
	case b.joinDone > 0:
		return b.joinSent, b.joinDone, true
	case len(b.attempts) > 0:
		return b.attempts[0].sent, b.attempts[0].done, true
	}
	return 0, 0, false
}

// addQueue puts the waiting room on the timeline of an onsale run: the
// buyers waiting at the end of each bucket and those admitted during it.
func addQueue(tl *timeline, buyers []record) {
	if tl == nil || len(tl.Buckets) == 0 {
		return
	}
	size := time.Duration(tl.BucketS * float64(time.Second))
	n := len(tl.Buckets)
	at := func(d time.Duration) int { return min(max(int(d/size), 0), n-1) }
	joined, gone := make([]int, n), make([]int, n) // per bucket
	for i := range tl.Buckets {
		tl.Buckets[i].Waiting, tl.Buckets[i].Admitted = new(int), new(int)
	}
	for _, r := range buyers {
		b := r.buyer
		if !b.joined {
			continue
		}
		joined[at(b.joinDone)]++
		switch {
		case b.admitted > 0:
			gone[at(b.admitted)]++
			*tl.Buckets[at(b.admitted)].Admitted++
		case b.left != "":
			gone[at(b.leftAt)]++
		}
	}
	waiting := 0
	for i := range tl.Buckets {
		waiting += joined[i] - gone[i]
		*tl.Buckets[i].Waiting = waiting
	}
}

// writeOnSale prints the onsale figures of the text report.
func writeOnSale(row func(name, format string, args ...any), o *onsaleCounts) {
	room := "none: every buyer races for holds"
	if o.QueueAdmitPerS > 0 {
		room = fmt.Sprintf("admits %d buyers/s", o.QueueAdmitPerS)
	}
	row("on sale", "%d buyers for %d seats; waiting room %s", o.Buyers, o.Capacity, room)
	if o.SoldOut {
		row("sold out", "after %.2fs (%.1f seats/s)", o.SellOutS, o.SeatsPerS)
	} else {
		row("sold out", "no: %d of %d seats confirmed (%.1f seats/s)", o.ConfirmedSeats, o.Capacity, o.SeatsPerS)
	}
	row("confirmed seats", "%d of %d (%d over capacity)", o.ConfirmedSeats, o.Capacity, o.OverCapacity)
	if o.QueueAdmitPerS > 0 {
		w := o.QueueWaitMS
		row("queue", "%d joined, %d admitted, %d polls (%d failed)", o.Joined, o.Admitted, o.Polls, o.PollErrors)
		row("queue wait", "p50 %s  p99 %s  max %s", fmtMS(w.P50), fmtMS(w.P99), fmtMS(w.Max))
		row("fifo inversions", "%d", o.FIFOInversions)
	}
	row("went home early", "%s", fmtCounts(o.Left))
	row("hold requests", "%d, %d refused (%d lock contention: seat_busy or seat_held)", o.HoldRequests, o.Refused, o.Contention)
	row("fairness", "%d buyers got seats; %d of them although someone who came before them got none", o.BuyersWithSeats, o.ServedOutOfOrder)
	at := "when the first group was refused sold_out"
	if o.StrandedAt == "end" {
		at = "in the final seat map"
	}
	row("stranded single seats", "%d (%s): %d avoidable; by cause %s", o.StrandedSingleSeats, at, o.StrandedAvoidable, fmtCounts(o.StrandedCauses))
}
