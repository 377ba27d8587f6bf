package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/internal/testenv"
)

// hold is the contract's Hold, as tests read it.
type hold struct {
	ID          string    `json:"id"`
	ScreeningID string    `json:"screening_id"`
	Seats       []string  `json:"seats"`
	Customer    string    `json:"customer"`
	Status      string    `json:"status"`
	ExpiresAt   time.Time `json:"expires_at"`
	BookingID   string    `json:"booking_id"`
	Token       string    `json:"token"`
}

// TestHolds drives the hold routes end to end on both stores: the seats
// of a live hold are nobody else's, a confirm books them once, a release
// frees them, and the store's clock ends a hold with nothing running.
func TestHolds(t *testing.T) {
	for name, env := range map[string]func(t *testing.T) map[string]string{
		"memory": func(*testing.T) map[string]string { return nil },
		"postgres": func(t *testing.T) map[string]string {
			return map[string]string{"REDIS_URL": testenv.RedisURL(t), "DATABASE_URL": testenv.NewDatabase(t)}
		},
	} {
		t.Run(name, func(t *testing.T) {
			base := startAPI(t, env(t)).url
			testHolds(t, base)
			checkHoldMetrics(t, base)
		})
	}
}

func testHolds(t *testing.T, base string) {
	t.Run("a held seat is nobody else's until confirmed, and then booked once", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Vertigo","rows":2,"seats_per_row":4,"hold_ttl_ms":60000}`)
		before := time.Now()
		h := mustHold(t, base, s.ID, "ann", "B2", "A1")
		if !slices.Equal(h.Seats, []string{"A1", "B2"}) || h.Status != "held" || h.Customer != "ann" || h.Token == "" || h.BookingID != "" {
			t.Errorf("hold %+v, want A1 B2 held for ann, with a token", h)
		}
		if d := h.ExpiresAt.Sub(before); d < 55*time.Second || d > 65*time.Second {
			t.Errorf("hold expires %v after the request, want the screening's 60s", d)
		}
		got := decode[hold](t, call(t, "GET", base+"/v1/holds/"+h.ID, ""))
		if got.Token != "" || got.Status != "held" || !got.ExpiresAt.Equal(h.ExpiresAt) {
			t.Errorf("GET hold = %+v, want it held, without its token", got)
		}
		e := wantError(t, call(t, "POST", base+"/v1/screenings/"+s.ID+"/bookings", bookingBody("bob", "B3", "B2")), http.StatusConflict, "seat_held")
		if !slices.Equal(e.Error.Seats, []string{"B2"}) {
			t.Errorf("seat_held names %v, want [B2]", e.Error.Seats)
		}
		wantError(t, call(t, "POST", base+"/v1/screenings/"+s.ID+"/holds", bookingBody("bob", "A1")), http.StatusConflict, "seat_held")
		_, seats := seatsOf(t, base, s.ID)
		if st := seats["A1"]; st.Status != "held" || st.HoldExpiresAt == nil || !st.HoldExpiresAt.Equal(h.ExpiresAt) || st.BookingID != "" {
			t.Errorf("seat A1 = %+v, want held until %v", st, h.ExpiresAt)
		}
		if st := seats["A2"]; st.Status != "free" || st.HoldExpiresAt != nil {
			t.Errorf("seat A2 = %+v, want free", st)
		}

		confirm := base + "/v1/holds/" + h.ID + "/confirm"
		wantError(t, call(t, "POST", confirm, ""), http.StatusUnauthorized, "unauthorized")
		wantError(t, call(t, "POST", confirm, "", "Authorization", "Bearer wrong"), http.StatusForbidden, "forbidden")
		wantError(t, call(t, "POST", confirm+"?token="+h.Token, ""), http.StatusUnauthorized, "unauthorized")
		r := call(t, "POST", confirm, "", "Authorization", "Bearer "+h.Token)
		if r.status != http.StatusCreated {
			t.Fatalf("confirm: %d %s", r.status, r.body)
		}
		b := decode[booking](t, r)
		if !slices.Equal(b.Seats, h.Seats) || b.Customer != "ann" || b.Status != "confirmed" || b.Token == "" {
			t.Errorf("confirm booked %+v", b)
		}
		again := call(t, "POST", confirm, "", "Authorization", "Bearer "+h.Token)
		if a := decode[booking](t, again); again.status != http.StatusOK || a.ID != b.ID || a.Token != b.Token || !a.CreatedAt.Equal(b.CreatedAt) {
			t.Errorf("repeated confirm: %d %s, want 200 and the same booking %+v", again.status, again.body, b)
		}
		if got := decode[hold](t, call(t, "GET", base+"/v1/holds/"+h.ID, "")); got.Status != "confirmed" || got.BookingID != b.ID {
			t.Errorf("hold after confirm = %+v, want confirmed as %s", got, b.ID)
		}
		_, seats = seatsOf(t, base, s.ID)
		if seats["A1"].Status != "booked" || seats["A1"].BookingID != b.ID || seats["A1"].HoldExpiresAt != nil {
			t.Errorf("seat A1 after confirm = %+v, want booked by %s", seats["A1"], b.ID)
		}
		wantError(t, call(t, "DELETE", base+"/v1/holds/"+h.ID, "", "Authorization", "Bearer "+h.Token), http.StatusConflict, "conflict")
		if r := call(t, "DELETE", base+"/v1/bookings/"+b.ID, "", "Authorization", "Bearer "+b.Token); r.status != http.StatusNoContent {
			t.Errorf("cancel with the confirm's token: %d %s", r.status, r.body)
		}
	})

	t.Run("a released hold frees its seats and cannot be confirmed", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Rear Window","rows":1,"seats_per_row":4}`)
		h := mustHold(t, base, s.ID, "cy", "A3")
		release := base + "/v1/holds/" + h.ID
		wantError(t, call(t, "DELETE", release, ""), http.StatusUnauthorized, "unauthorized")
		wantError(t, call(t, "DELETE", release, "", "Authorization", "Bearer "+h.Token+"x"), http.StatusForbidden, "forbidden")
		for range 2 { // a second release changes nothing
			if r := call(t, "DELETE", release, "", "Authorization", "Bearer "+h.Token); r.status != http.StatusNoContent {
				t.Fatalf("release: %d %s", r.status, r.body)
			}
		}
		if got := decode[hold](t, call(t, "GET", release, "")); got.Status != "released" {
			t.Errorf("hold after release = %+v", got)
		}
		wantError(t, call(t, "POST", release+"/confirm", "", "Authorization", "Bearer "+h.Token), http.StatusConflict, "conflict")
		if _, seats := seatsOf(t, base, s.ID); seats["A3"].Status != "free" {
			t.Errorf("A3 after release = %+v, want free", seats["A3"])
		}
		mustHold(t, base, s.ID, "dee", "A3")
	})

	t.Run("an expired hold frees its seats with nothing running, and its confirm is refused", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Psycho","rows":1,"seats_per_row":4,"hold_ttl_ms":1000}`)
		h := mustHold(t, base, s.ID, "eve", "A2")
		// The store's clock decides: wait until the API says expired.
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			got := decode[hold](t, call(t, "GET", base+"/v1/holds/"+h.ID, ""))
			if got.Status == "expired" {
				break
			}
			if got.Status != "held" || time.Now().After(deadline) {
				t.Fatalf("hold %+v never expired", got)
			}
		}
		wantError(t, call(t, "POST", base+"/v1/holds/"+h.ID+"/confirm", "", "Authorization", "Bearer "+h.Token), http.StatusConflict, "hold_expired")
		if _, seats := seatsOf(t, base, s.ID); seats["A2"].Status != "free" || seats["A2"].HoldExpiresAt != nil {
			t.Errorf("A2 after expiry = %+v, want free", seats["A2"])
		}
		if r := call(t, "DELETE", base+"/v1/holds/"+h.ID, "", "Authorization", "Bearer "+h.Token); r.status != http.StatusNoContent {
			t.Errorf("release of an expired hold: %d %s, want 204", r.status, r.body)
		}
		if r := call(t, "POST", base+"/v1/screenings/"+s.ID+"/bookings", bookingBody("fay", "A2")); r.status != http.StatusCreated {
			t.Errorf("booking A2 after expiry: %d %s", r.status, r.body)
		}
		wantError(t, call(t, "POST", base+"/v1/holds/"+h.ID+"/confirm", "", "Authorization", "Bearer "+h.Token), http.StatusConflict, "hold_expired")
	})

	t.Run("bad requests are 4xx and hold nothing", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Rope","rows":1,"seats_per_row":2}`)
		holds := base + "/v1/screenings/" + s.ID + "/holds"
		for _, body := range []string{`{"seats":["A1"]}`, `{"seats":["A3"],"customer":"x"}`, `{"seats":[],"customer":"x"}`, `{"seats":["A1","A1"],"customer":"x"}`, `{"seat":["A1"],"customer":"x"}`, `nope`} {
			wantError(t, call(t, "POST", holds, body), http.StatusBadRequest, "invalid_request")
		}
		wantError(t, call(t, "POST", base+"/v1/screenings/nope/holds", bookingBody("x", "A1")), http.StatusNotFound, "not_found")
		for _, id := range []string{uuid.NewString(), "not-a-uuid", uuid.NewString() + "x"} {
			wantError(t, call(t, "GET", base+"/v1/holds/"+id, ""), http.StatusNotFound, "not_found")
			wantError(t, call(t, "POST", base+"/v1/holds/"+id+"/confirm", "", "Authorization", "Bearer t"), http.StatusNotFound, "not_found")
			wantError(t, call(t, "DELETE", base+"/v1/holds/"+id, "", "Authorization", "Bearer t"), http.StatusNotFound, "not_found")
		}
		for _, ttl := range []string{"999", "3600001", "-1", "1.5", `"60000"`, "99999999999999999999"} {
			wantError(t, call(t, "POST", base+"/v1/screenings", `{"movie":"x","rows":1,"seats_per_row":1,"hold_ttl_ms":`+ttl+`}`), http.StatusBadRequest, "invalid_request")
		}
		if _, seats := seatsOf(t, base, s.ID); seats["A1"].Status != "free" || seats["A2"].Status != "free" {
			t.Errorf("seats after bad requests: %+v", seats)
		}
	})
}

// checkHoldMetrics checks the hold series of an instance after testHolds:
// 4 holds made, 1 confirmed, 1 released, 2 confirms that found theirs
// expired, and one confirm delay observed.
func checkHoldMetrics(t *testing.T, base string) {
	t.Helper()
	body := string(call(t, "GET", base+"/metrics", "").body)
	for _, want := range []string{
		`seatlock_holds_total{outcome="held"} 4`,
		`seatlock_holds_total{outcome="confirmed"} 1`,
		`seatlock_holds_total{outcome="released"} 1`,
		`seatlock_holds_total{outcome="expired"} 2`,
		`seatlock_hold_confirm_delay_seconds_count 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// mustHold holds seats through the API and returns the hold.
func mustHold(t *testing.T, base, screeningID, customer string, seats ...string) hold {
	t.Helper()
	r := call(t, "POST", base+"/v1/screenings/"+screeningID+"/holds", bookingBody(customer, seats...))
	if r.status != http.StatusCreated {
		t.Fatalf("hold %v: %d %s", seats, r.status, r.body)
	}
	h := decode[hold](t, r)
	if loc := r.header.Get("Location"); loc != "/v1/holds/"+h.ID {
		t.Errorf("Location %q", loc)
	}
	return h
}

// TestHoldsAcrossInstances races holds of one seat, then confirms of one
// hold, over three instances on one Postgres: one hold, one booking.
func TestHoldsAcrossInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	insts := startCluster(t, 3, "-lock-wait", "5s")
	for _, lock := range []string{"keyed+redis", "postgres-xact", "none"} {
		t.Run(lock, func(t *testing.T) {
			s := createScreening(t, insts[0].url, `{"movie":"Notorious","rows":1,"seats_per_row":4,"lock":"`+lock+`"}`)
			const n = 30
			answers := make([]response, n)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					url := insts[i%len(insts)].url + "/v1/screenings/" + s.ID + "/holds"
					answers[i] = call(t, "POST", url, bookingBody(fmt.Sprintf("c%d", i), "A2", "A3"))
				})
			}
			close(start)
			wg.Wait()
			var won []hold
			for _, r := range answers {
				switch {
				case r.status == http.StatusCreated:
					won = append(won, decode[hold](t, r))
				case r.status == http.StatusConflict:
					if code := decode[apiError](t, r).Error.Code; code != "seat_held" && code != "seat_busy" {
						t.Errorf("losing hold: 409 %s, want seat_held or seat_busy", code)
					}
				default:
					t.Errorf("hold: %d %s", r.status, r.body)
				}
			}
			if len(won) != 1 {
				t.Fatalf("%d holds of the same seats over three instances succeeded, want 1", len(won))
			}
			h := won[0]

			confirms := make([]response, n)
			start = make(chan struct{})
			for i := range n {
				wg.Go(func() {
					<-start
					url := insts[i%len(insts)].url + "/v1/holds/" + h.ID + "/confirm"
					confirms[i] = call(t, "POST", url, "", "Authorization", "Bearer "+h.Token)
				})
			}
			close(start)
			wg.Wait()
			created, ids := 0, map[string]bool{}
			for _, r := range confirms {
				if r.status != http.StatusCreated && r.status != http.StatusOK {
					t.Fatalf("confirm: %d %s", r.status, r.body)
				}
				if r.status == http.StatusCreated {
					created++
				}
				ids[decode[booking](t, r).ID] = true
			}
			if created != 1 || len(ids) != 1 {
				t.Fatalf("%d confirms created a booking, answering %d distinct bookings; want 1 and 1", created, len(ids))
			}
			for _, inst := range insts {
				_, seats := seatsOf(t, inst.url, s.ID)
				for _, id := range []string{"A2", "A3"} {
					if !ids[seats[id].BookingID] || seats[id].Status != "booked" {
						t.Errorf("%s: %s = %+v, want booked by the one booking", inst.url, id, seats[id])
					}
				}
			}

			// Best available through the same strategy: A1 and A4 are
			// left, not side by side.
			url := insts[2].url + "/v1/screenings/" + s.ID + "/holds"
			wantError(t, call(t, "POST", url, `{"count":2,"adjacent":true,"customer":"pair"}`), http.StatusConflict, "sold_out")
			if r := call(t, "POST", url, `{"count":2,"customer":"two"}`); r.status != http.StatusCreated || !slices.Equal(decode[hold](t, r).Seats, []string{"A1", "A4"}) {
				t.Errorf("best 2 anywhere: %d %s, want a hold of A1 A4", r.status, r.body)
			}
		})
	}
}

// TestHoldEventsAcrossInstances holds on instance A and sees the hold, with
// its expiry, on a stream of instance B; the release on B reaches A.
func TestHoldEventsAcrossInstances(t *testing.T) {
	insts := startCluster(t, 2)
	a, b := insts[0], insts[1]
	s := createScreening(t, a.url, `{"movie":"Two rooms","rows":2,"seats_per_row":4}`)
	stream := openEvents(t, b.url, s.ID)
	h := mustHold(t, a.url, s.ID, "ann", "B3")
	stream.await(t, "event: held", 5*time.Second)
	data := stream.await(t, "data: ", 10*time.Second)
	want := `"expires_at":"` + h.ExpiresAt.UTC().Format(time.RFC3339Nano) + `"`
	if !strings.Contains(data, `"hold_id":"`+h.ID+`"`) || !strings.Contains(data, want) || !strings.Contains(data, `"B3"`) || strings.Contains(data, "booking_id") {
		t.Errorf("B's held event %s, want hold %s of B3 with %s", data, h.ID, want)
	}
	back := openEvents(t, a.url, s.ID)
	if r := call(t, "DELETE", b.url+"/v1/holds/"+h.ID, "", "Authorization", "Bearer "+h.Token); r.status != http.StatusNoContent {
		t.Fatalf("release on B: %d %s", r.status, r.body)
	}
	back.await(t, "event: released", 5*time.Second)
	if data := back.await(t, "data: ", 10*time.Second); !strings.Contains(data, h.ID) || strings.Contains(data, "expires_at") {
		t.Errorf("A's released event %s, want hold %s without an expiry", data, h.ID)
	}
}
