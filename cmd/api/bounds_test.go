package main

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestScreeningLimit fills a store to MAX_SCREENINGS (the demo screening
// counts): one more is 503 limit_reached with Retry-After, creates
// nothing, and leaves reads working. An instance started on a full store
// still starts: its demo screening is there already.
func TestScreeningLimit(t *testing.T) {
	env := map[string]string{"DATABASE_URL": testenv.NewDatabase(t), "REDIS_URL": testenv.RedisURL(t), "MAX_SCREENINGS": "2"}
	first := startAPI(t, env)
	createScreening(t, first.url, `{"movie":"Two","rows":1,"seats_per_row":1}`)
	r := call(t, "POST", first.url+"/v1/screenings", `{"id":"three","movie":"Three","rows":1,"seats_per_row":1}`)
	wantError(t, r, http.StatusServiceUnavailable, "limit_reached")
	if got := r.header.Get("Retry-After"); got != "3600" {
		t.Errorf("Retry-After %q, want 3600: the bound clears only as screenings play, hours apart", got)
	}
	if r := call(t, "GET", first.url+"/v1/screenings/three", ""); r.status != http.StatusNotFound {
		t.Errorf("the refused screening exists: %d %s", r.status, r.body)
	}
	page := decode[struct{ Screenings []screening }](t, call(t, "GET", first.url+"/v1/screenings", ""))
	if len(page.Screenings) != 2 {
		t.Errorf("%d screenings listed, want 2", len(page.Screenings))
	}

	env["MAX_SCREENINGS"] = "1"
	second := startAPI(t, env)
	wantError(t, call(t, "POST", second.url+"/v1/screenings", `{"movie":"Four","rows":1,"seats_per_row":1}`), http.StatusServiceUnavailable, "limit_reached")
}

// TestWriteRate bounds writes to one a second, in bursts of one: the
// second booking in a row is 429 rate_limited with Retry-After and books
// nothing, and reads are not limited. Without WRITE_RATE (every other
// test) writes are not limited at all.
func TestWriteRate(t *testing.T) {
	inst := startAPI(t, map[string]string{"WRITE_RATE": "1"})
	if r := call(t, "POST", inst.url+"/v1/screenings/demo/bookings", bookingBody("alice", "A1")); r.status != http.StatusCreated {
		t.Fatalf("first write: %d %s", r.status, r.body)
	}
	r := call(t, "POST", inst.url+"/v1/screenings/demo/bookings", bookingBody("bob", "A2"))
	wantError(t, r, http.StatusTooManyRequests, "rate_limited")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After %q, want whole seconds, at least 1", r.header.Get("Retry-After"))
	}
	wantError(t, call(t, "DELETE", inst.url+"/v1/bookings/6f1c9a52-0000-4000-8000-000000000000", "", "Authorization", "Bearer x"),
		http.StatusTooManyRequests, "rate_limited")
	for range 5 {
		if _, m := seatsOf(t, inst.url, "demo"); m["A2"].Status != "free" {
			t.Fatalf("A2 is %q after a refused write, want free", m["A2"].Status)
		}
	}
}
