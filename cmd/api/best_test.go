package main

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

// TestBestAvailableAPI asks for seats by count through the API, for
// bookings and holds, and checks the documented order and the answers to
// bad bodies and a full screening.
func TestBestAvailableAPI(t *testing.T) {
	base := startAPI(t, nil).url
	s := createScreening(t, base, `{"movie":"Best","rows":10,"seats_per_row":20}`)
	r := call(t, "POST", base+"/v1/screenings/"+s.ID+"/bookings", `{"count":2,"adjacent":true,"customer":"ann"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("best 2: %d %s", r.status, r.body)
	}
	if b := decode[booking](t, r); !slices.Equal(b.Seats, []string{"F10", "F11"}) {
		t.Errorf("best 2 adjacent on 10x20 = %v, want F10 F11", b.Seats)
	}
	h := decode[hold](t, call(t, "POST", base+"/v1/screenings/"+s.ID+"/holds", `{"count":2,"adjacent":true,"customer":"bob"}`))
	if !slices.Equal(h.Seats, []string{"F8", "F9"}) || h.Token == "" {
		t.Errorf("best 2 adjacent held = %+v, want F8 F9", h)
	}
	b := decode[booking](t, call(t, "POST", base+"/v1/screenings/"+s.ID+"/bookings", `{"count":3,"customer":"cy"}`))
	if !slices.Equal(b.Seats, []string{"F7", "F12", "F13"}) {
		t.Errorf("best 3 = %v, want F7 F12 F13 (the next best singles of row F)", b.Seats)
	}
	for _, body := range []string{
		`{"seats":["A1"],"count":1,"customer":"x"}`, `{"customer":"x"}`, `{"adjacent":true,"customer":"x"}`,
		`{"seats":["A1"],"adjacent":true,"customer":"x"}`, `{"count":11,"customer":"x"}`, `{"count":0,"customer":"x"}`,
		`{"count":"2","customer":"x"}`, `{"count":1.5,"customer":"x"}`, `{"count":2,"adjacent":"yes","customer":"x"}`, `{"count":1}`,
	} {
		for _, route := range []string{"/bookings", "/holds"} {
			wantError(t, call(t, "POST", base+"/v1/screenings/"+s.ID+route, body), http.StatusBadRequest, "invalid_request")
		}
	}

	small := createScreening(t, base, `{"movie":"Small","rows":1,"seats_per_row":3}`)
	for range 3 {
		if r := call(t, "POST", base+"/v1/screenings/"+small.ID+"/bookings", `{"count":1,"customer":"x"}`); r.status != http.StatusCreated {
			t.Fatalf("count 1: %d %s", r.status, r.body)
		}
	}
	for _, route := range []string{"/bookings", "/holds"} {
		wantError(t, call(t, "POST", base+"/v1/screenings/"+small.ID+route, `{"count":1,"customer":"x"}`), http.StatusConflict, "sold_out")
	}
}

// TestBestAvailableUnderContention has 64 clients, spread over two
// instances on one Redis and one Postgres, book 2 seats side by side on a
// 10x20 screening until it is sold out, with a payment of 50ms inside each
// critical section; then one client alone does the same. Every seat must
// be booked at most once, in pairs side by side, and every refusal must be
// sold_out, when no two free seats are left side by side. (Pairs from the
// middle out leave seats 1 and 20 of every row alone: 90 bookings.) It logs how many bookings ran at once (the sum of the booking
// requests' durations over the wall time): near 1 would mean that the
// requests queued behind each other for the same best seats. The figures
// are logged, not asserted: the machine may be busy.
func TestBestAvailableUnderContention(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	insts := startCluster(t, 2, "-lock-wait", "5s")
	for _, clients := range []int{64, 1} {
		s := createScreening(t, insts[0].url, `{"movie":"Rush","rows":10,"seats_per_row":20,"payment_delay_ms":50}`)
		var mu sync.Mutex // protects got, refused and busy
		var got []booking
		var busy time.Duration
		refused := 0
		start := time.Now()
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() {
				url := insts[i%len(insts)].url + "/v1/screenings/" + s.ID + "/bookings"
				for range 200 { // more than the pairs the screening has
					t0 := time.Now()
					r := call(t, "POST", url, fmt.Sprintf(`{"count":2,"adjacent":true,"customer":"c%d"}`, i))
					d := time.Since(t0)
					mu.Lock()
					busy += d
					switch {
					case r.status == http.StatusCreated:
						got = append(got, decode[booking](t, r))
					case r.status == http.StatusConflict && decode[apiError](t, r).Error.Code == "sold_out":
						refused++
					default:
						t.Errorf("best 2: %d %s", r.status, r.body)
					}
					mu.Unlock()
					if r.status != http.StatusCreated {
						return
					}
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)

		if len(got) != 90 || refused != clients {
			t.Errorf("%d clients: %d bookings and %d sold_out, want 90 and %d", clients, len(got), refused, clients)
		}
		owner := map[string]string{}
		for _, b := range got {
			row0, n0, _ := reservation.ParseSeatID(b.Seats[0])
			row1, n1, _ := reservation.ParseSeatID(b.Seats[1])
			if len(b.Seats) != 2 || row0 != row1 || n1 != n0+1 {
				t.Errorf("booking %v is not 2 seats side by side", b.Seats)
			}
			for _, seat := range b.Seats {
				if other, ok := owner[seat]; ok {
					t.Errorf("seat %s booked twice: %s and %s", seat, other, b.ID)
				}
				owner[seat] = b.ID
			}
		}
		_, seats := seatsOf(t, insts[1].url, s.ID)
		for id, st := range seats {
			if st.BookingID != owner[id] || (owner[id] == "") != (st.Status == "free") {
				t.Errorf("seat %s is %s by %q, want booked by %q", id, st.Status, st.BookingID, owner[id])
			}
			if next := fmt.Sprintf("%s%d", st.Row, st.Number+1); st.Status == "free" && seats[next].Status == "free" {
				t.Errorf("sold out for 2 side by side, but %s and %s are free", id, next)
			}
		}
		t.Logf("%2d clients: %d bookings of 2 adjacent seats in %v, %.0f bookings/s, %.1f booking requests in flight on average",
			clients, len(got), wall.Round(time.Millisecond), float64(len(got))/wall.Seconds(), busy.Seconds()/wall.Seconds())
	}
}
