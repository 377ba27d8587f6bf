package main

import (
	"context"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// seatKey names a seat across screenings: "<screening id>/<seat id>".
func seatKey(screeningID, seat string) string { return screeningID + "/" + seat }

// unnamedHolder stands for a booking id when the seat map says a seat is
// booked but not by whom: a holder that matches no booking at all.
const unnamedHolder = "?"

// seatMap is who holds each seat: seat key to booking id, "" when free.
type seatMap map[string]string

// snapshot is a seat map read from the server, with when it was read.
type snapshot struct {
	seats      seatMap
	call, done time.Duration // offsets from the start of the run
}

// counts are the safety figures of one run, computed from the answers and
// the final seat map (see docs/loadgen.md for exact definitions).
type counts struct {
	// DoubleBookedSeats is how many seats were confirmed by a 201 to more
	// than one booking (or by a 201 although booked before the run).
	DoubleBookedSeats int `json:"double_booked_seats"`
	// LostBookings is how many bookings confirmed by a 201 do not hold all
	// their seats in the final seat map.
	LostBookings int `json:"lost_bookings"`
	// PhantomSeats is how many seats are booked in the final map by a
	// booking that no 201 named (and that was not there before the run).
	PhantomSeats int `json:"phantom_seats"`
	// PhantomSeatsExplained are the phantom seats whose booking belongs to
	// a request that got no answer or a 5xx: the server booked them and
	// the answer was lost, which is allowed.
	PhantomSeatsExplained int `json:"phantom_seats_explained"`
	// PhantomSeatsContradicted are the phantom seats whose booking belongs
	// to a request that got a definite refusal (409, 4xx): the server said
	// "not booked" and booked. That is an error, like a lost booking.
	PhantomSeatsContradicted int `json:"phantom_seats_contradicted"`
}

// failed reports whether the counts show a broken booking service.
func (c counts) failed() bool {
	return c.DoubleBookedSeats > 0 || c.LostBookings > 0 || c.PhantomSeatsContradicted > 0
}

// phantomBookings lists the booking ids of the final map that neither a 201
// nor the map before the run explains; their owners are looked up so that
// count can tell explained phantoms from contradicted ones.
func phantomBookings(records []record, before, after seatMap) []string {
	known := confirmedIDs(records)
	seen := map[string]bool{}
	var ids []string
	for key, id := range after {
		if id != "" && id != unnamedHolder && !known[id] && before[key] != id && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// count computes the safety figures. before is the seat map at the start
// (empty for a fresh screening), after the final one, and owners maps the
// booking ids of phantomBookings to their customers where they could be
// looked up.
func count(records []record, before, after seatMap, owners map[string]string) counts {
	var c counts

	holders := map[string]map[string]bool{} // seat key -> confirmed booking ids
	for i := range records {
		r := &records[i]
		if !r.confirmed() {
			continue
		}
		lost := false
		for _, seat := range r.bookedSeats() {
			key := seatKey(r.screening, seat)
			if holders[key] == nil {
				holders[key] = map[string]bool{}
			}
			holders[key][r.booking.ID] = true
			if after[key] != r.booking.ID {
				lost = true
			}
		}
		if lost {
			c.LostBookings++
		}
	}
	for key, ids := range holders {
		n := len(ids)
		if before[key] != "" {
			n++
		}
		if n > 1 {
			c.DoubleBookedSeats++
		}
	}

	byCustomer := map[string]*record{}
	for i := range records {
		byCustomer[records[i].customer] = &records[i]
	}
	known := confirmedIDs(records)
	for key, id := range after {
		if id == "" || known[id] || before[key] == id {
			continue
		}
		c.PhantomSeats++
		r := byCustomer[owners[id]]
		switch {
		case r == nil:
			// Not one of ours, or its owner could not be looked up:
			// counted, but proves nothing either way.
		case r.ambiguous():
			c.PhantomSeatsExplained++
		default:
			c.PhantomSeatsContradicted++
		}
	}
	return c
}

// placeUnnamed gives each request that got no answer (or a 5xx) and did
// not name its seats (best asks for a count, not for seats) the seats its
// booking holds in the final map, found through owners (booking id to
// customer), so that the linearizability check can place it. A request
// whose booking is not in the final map keeps no seats: either it booked
// nothing, or what it booked was lost, which count reports.
func placeUnnamed(records []record, final seatMap, owners map[string]string) {
	unnamed := map[string]*record{} // customer -> its request
	for i := range records {
		if r := &records[i]; r.ambiguous() && len(r.seats) == 0 {
			unnamed[r.customer] = r
		}
	}
	if len(unnamed) == 0 {
		return
	}
	for _, key := range slices.Sorted(maps.Keys(final)) {
		r := unnamed[owners[final[key]]]
		if r == nil {
			continue
		}
		screening, seat, _ := strings.Cut(key, "/")
		if screening == r.screening {
			r.seats = append(r.seats, seat)
		}
	}
}

// confirmedIDs is the set of booking ids named by 201 answers.
func confirmedIDs(records []record) map[string]bool {
	ids := map[string]bool{}
	for i := range records {
		if records[i].confirmed() {
			ids[records[i].booking.ID] = true
		}
	}
	return ids
}

// readSeats reads the seat maps of the screenings into one seatMap.
func readSeats(ctx context.Context, c *client, target string, screenings []*screening, start time.Time) (snapshot, error) {
	snap := snapshot{seats: seatMap{}, call: time.Since(start)}
	for _, s := range screenings {
		seats, err := c.seats(ctx, target, s.ID)
		if err != nil {
			return snapshot{}, err
		}
		for _, seat := range seats {
			id := ""
			if seat.Status == "booked" {
				id = seat.BookingID
				if id == "" {
					id = unnamedHolder
				}
			}
			snap.seats[seatKey(s.ID, seat.ID)] = id
		}
	}
	snap.done = time.Since(start)
	return snap, nil
}

// maxOwnerLookups bounds how many phantom bookings are looked up one by
// one: past that, a broken server would turn verification into a load test.
const maxOwnerLookups = 2000

// lookupOwners asks the server who made each booking (GET
// /v1/bookings/{id}) and returns booking id to customer for the ones it
// could read. Failed lookups are left out: their seats stay unexplained.
func lookupOwners(ctx context.Context, c *client, target string, ids []string) map[string]string {
	ids = ids[:min(len(ids), maxOwnerLookups)]
	owners := make(map[string]string, len(ids))
	var (
		mu   sync.Mutex // protects owners
		wg   sync.WaitGroup
		work = make(chan string)
	)
	for range min(8, len(ids)) {
		wg.Go(func() {
			for id := range work {
				b, err := c.booking(ctx, target, id)
				if err != nil {
					continue
				}
				mu.Lock()
				owners[id] = b.Customer
				mu.Unlock()
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	return owners
}
