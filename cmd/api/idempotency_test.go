package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestIdempotencyAcrossInstances sends the same Idempotency-Key and body
// to two instances at the same instant (after a common start signal), for
// many pairs on several seats at once: each pair books once, both of its
// answers are 201 with the same booking id and token, and the seat map
// holds exactly those bookings.
//
// Under keyed+redis the seat lock serialises the pair and the second
// request finds the first's record once it holds the lock. Under lock=none
// with guard=fence nothing serialises them; the store's unique index on
// (screening, key hash) is what lets only one write in, and the loser
// answers with the winner's booking.
func TestIdempotencyAcrossInstances(t *testing.T) {
	insts := startCluster(t, 2)
	for _, tc := range []struct{ name, screening string }{
		{"keyed+redis", `{"movie":"Idem","rows":2,"seats_per_row":20}`},
		{"lock none, guard fence", `{"movie":"Idem","rows":2,"seats_per_row":20,"lock":"none","guard":"fence"}`},
		{"lock none, guard fence, payment delay", `{"movie":"Idem","rows":2,"seats_per_row":20,"lock":"none","guard":"fence","payment_delay_ms":50}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := createScreening(t, insts[0].url, tc.screening)
			const pairs = 16
			type answer struct {
				r response
				b booking
			}
			answers := make([][2]answer, pairs)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for p := range pairs {
				// Pair p books two seats of its own: A(p+1) and B(p+1).
				body := bookingBody(fmt.Sprintf("pair-%d", p), fmt.Sprintf("A%d", p+1), fmt.Sprintf("B%d", p+1))
				key := fmt.Sprintf("%s-pair-%d", s.ID, p)
				for i, inst := range insts {
					wg.Go(func() {
						<-start
						r := call(t, "POST", inst.url+"/v1/screenings/"+s.ID+"/bookings", body, "Idempotency-Key", key)
						answers[p][i].r = r
						if r.status == http.StatusCreated {
							answers[p][i].b = decode[booking](t, r)
						}
					})
				}
			}
			close(start)
			wg.Wait()

			_, seats := seatsOf(t, insts[1].url, s.ID)
			for p, pair := range answers {
				a, b := pair[0], pair[1]
				if a.r.status != http.StatusCreated || b.r.status != http.StatusCreated {
					t.Errorf("pair %d: answers %d %s and %d %s, want two 201s", p, a.r.status, a.r.body, b.r.status, b.r.body)
					continue
				}
				if a.b.ID != b.b.ID || a.b.Token != b.b.Token || !a.b.CreatedAt.Equal(b.b.CreatedAt) {
					t.Errorf("pair %d: the answers disagree:\n%+v\n%+v", p, a.b, b.b)
				}
				for _, seat := range []string{fmt.Sprintf("A%d", p+1), fmt.Sprintf("B%d", p+1)} {
					if seats[seat].BookingID != a.b.ID {
						t.Errorf("pair %d: seat %s is held by %q, want %s", p, seat, seats[seat].BookingID, a.b.ID)
					}
				}
			}
			booked := 0
			for _, seat := range seats {
				if seat.Status == "booked" {
					booked++
				}
			}
			if booked != 2*pairs {
				t.Errorf("%d seats booked, want %d", booked, 2*pairs)
			}
			// The key still replays, and still refuses another body.
			r := call(t, "POST", insts[1].url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("pair-0", "A1", "B1"), "Idempotency-Key", s.ID+"-pair-0")
			if r.status != http.StatusCreated || decode[booking](t, r).ID != answers[0][0].b.ID {
				t.Errorf("replay after the race: %d %s", r.status, r.body)
			}
			r = call(t, "POST", insts[0].url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("pair-0", "A20"), "Idempotency-Key", s.ID+"-pair-0")
			if r.status != http.StatusUnprocessableEntity || !strings.Contains(string(r.body), "idempotency_mismatch") {
				t.Errorf("another body with the key: %d %s", r.status, r.body)
			}
		})
	}
}
