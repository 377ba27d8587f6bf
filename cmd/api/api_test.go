package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestAPI drives every route of the contract end to end through run, on the
// in-memory store and the embedded Redis.
func TestAPI(t *testing.T) {
	api := startAPI(t, map[string]string{"DEMO_MODE": "true"}, "-lock-wait", "300ms")
	base := api.url

	t.Run("health, readiness, metrics and the page", func(t *testing.T) {
		if r := call(t, "GET", base+"/healthz", ""); r.status != 200 || string(r.body) != "{\"status\":\"ok\"}\n" {
			t.Errorf("healthz: %d %s", r.status, r.body)
		}
		if r := call(t, "GET", base+"/readyz", ""); r.status != 200 || string(r.body) != "{\"status\":\"ready\"}\n" {
			t.Errorf("readyz: %d %s", r.status, r.body)
		}
		r := call(t, "GET", base+"/", "")
		if r.status != 200 || !strings.Contains(string(r.body), "<title>seatlock</title>") || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("page: %d %q", r.status, r.header.Get("Content-Type"))
		}
		r = call(t, "GET", base+"/metrics", "")
		for _, want := range []string{
			`http_requests_total{method="GET",route="/healthz",status="200"}`,
			`http_request_duration_seconds_bucket{route="/readyz"`,
			`go_goroutines`,
		} {
			if r.status != 200 || !strings.Contains(string(r.body), want) {
				t.Errorf("metrics (%d) lack %s", r.status, want)
			}
		}
	})

	t.Run("request ids are echoed or made", func(t *testing.T) {
		if r := call(t, "GET", base+"/healthz", "", "X-Request-ID", "abc-123"); r.header.Get("X-Request-ID") != "abc-123" {
			t.Errorf("X-Request-ID %q, want the client's", r.header.Get("X-Request-ID"))
		}
		if r := call(t, "GET", base+"/healthz", "", "X-Request-ID", "has space"); uuid.Validate(r.header.Get("X-Request-ID")) != nil {
			t.Errorf("X-Request-ID %q, want a fresh uuid for a bad one", r.header.Get("X-Request-ID"))
		}
	})

	t.Run("the demo screening exists", func(t *testing.T) {
		list := decode[struct{ Screenings []screening }](t, call(t, "GET", base+"/v1/screenings", ""))
		i := slices.IndexFunc(list.Screenings, func(s screening) bool { return s.ID == "demo" })
		if i < 0 {
			t.Fatalf("no demo screening in %+v", list)
		}
		if d := list.Screenings[i]; d.Movie != "Demo Night" || d.Rows != 10 || d.SeatsPerRow != 20 || d.Lock != "keyed+redis" || d.Guard != "fence" {
			t.Errorf("demo screening %+v", d)
		}
	})

	t.Run("screenings are created, read and conflict", func(t *testing.T) {
		r := call(t, "POST", base+"/v1/screenings", `{"movie":"Alien","starts_at":"2026-05-01T20:00:00+02:00","rows":3,"seats_per_row":4}`)
		if r.status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		wantFields(t, r.body, "id", "movie", "starts_at", "rows", "seats_per_row", "lock", "guard", "payment_delay_ms")
		s := decode[screening](t, r)
		if uuid.Validate(s.ID) != nil || s.Movie != "Alien" || !s.StartsAt.Equal(time.Date(2026, 5, 1, 18, 0, 0, 0, time.UTC)) ||
			s.Rows != 3 || s.SeatsPerRow != 4 || s.Lock != "keyed+redis" || s.Guard != "fence" || s.PaymentDelayMS != 0 {
			t.Errorf("created %+v", s)
		}
		if loc := r.header.Get("Location"); loc != "/v1/screenings/"+s.ID {
			t.Errorf("Location %q", loc)
		}
		if got := decode[screening](t, call(t, "GET", base+"/v1/screenings/"+s.ID, "")); got != s {
			t.Errorf("GET answers %+v, want %+v", got, s)
		}
		raw, seats := seatsOf(t, base, s.ID)
		if len(seats) != 12 || !strings.Contains(raw, `{"id":"C4","row":"C","number":4,"status":"free"}`) || strings.Contains(raw, "booking_id") {
			t.Errorf("seat map of a new screening: %s", raw)
		}

		id := "matinee-" + uuid.NewString()[:8]
		body := `{"id":"` + id + `","movie":"Heat","rows":1,"seats_per_row":1,"lock":"redis","guard":"off","payment_delay_ms":250}`
		s2 := createScreening(t, base, body)
		if s2.ID != id || s2.Lock != "redis" || s2.Guard != "off" || s2.PaymentDelayMS != 250 {
			t.Errorf("created %+v", s2)
		}
		wantError(t, call(t, "POST", base+"/v1/screenings", body), http.StatusConflict, "conflict")
	})

	t.Run("unknown ids are 404", func(t *testing.T) {
		for _, path := range []string{
			"/v1/screenings/nope", "/v1/screenings/nope/seats", "/v1/screenings/" + uuid.NewString(),
			"/v1/bookings/" + uuid.NewString(), "/v1/bookings/not-a-uuid", "/v1/bookings/%00",
		} {
			wantError(t, call(t, "GET", base+path, ""), http.StatusNotFound, "not_found")
		}
		wantError(t, call(t, "POST", base+"/v1/screenings/nope/bookings", bookingBody("al", "A1")), http.StatusNotFound, "not_found")
		wantError(t, call(t, "DELETE", base+"/v1/bookings/"+uuid.NewString(), "", "Authorization", "Bearer x"), http.StatusNotFound, "not_found")
		wantError(t, call(t, "DELETE", base+"/v1/bookings/"+uuid.NewString(), ""), http.StatusNotFound, "not_found")
	})

	t.Run("unknown routes are 404 and wrong methods 405, in JSON", func(t *testing.T) {
		wantError(t, call(t, "GET", base+"/v2/screenings", ""), http.StatusNotFound, "not_found")
		wantError(t, call(t, "GET", base+"/v1/screenings/", ""), http.StatusNotFound, "not_found")
		wantError(t, call(t, "PUT", base+"/v1/screenings", "{}"), http.StatusMethodNotAllowed, "method_not_allowed")
		wantError(t, call(t, "DELETE", base+"/v1/screenings/demo", ""), http.StatusMethodNotAllowed, "method_not_allowed")
		wantError(t, call(t, "POST", base+"/healthz", ""), http.StatusMethodNotAllowed, "method_not_allowed")
	})

	t.Run("bad screenings are 400 and create nothing", func(t *testing.T) {
		before := call(t, "GET", base+"/v1/screenings", "").body
		for _, tc := range []struct{ name, body string }{
			{"malformed JSON", `{"movie":"x",`},
			{"not an object", `[1,2]`},
			{"empty body", ``},
			{"null", `null`},
			{"trailing data", `{"movie":"x","rows":1,"seats_per_row":1} {}`},
			{"unknown field", `{"movie":"x","rows":1,"seats_per_row":1,"colour":"red"}`},
			{"rows as string", `{"movie":"x","rows":"5","seats_per_row":1}`},
			{"rows huge float", `{"movie":"x","rows":1e30,"seats_per_row":1}`},
			{"rows huge integer", `{"movie":"x","rows":99999999999999999999,"seats_per_row":1}`},
			{"rows fractional", `{"movie":"x","rows":1.5,"seats_per_row":1}`},
			{"rows 0", `{"movie":"x","rows":0,"seats_per_row":1}`},
			{"rows 27", `{"movie":"x","rows":27,"seats_per_row":1}`},
			{"seats_per_row 101", `{"movie":"x","rows":1,"seats_per_row":101}`},
			{"negative seats_per_row", `{"movie":"x","rows":1,"seats_per_row":-1}`},
			{"payment delay overflowing", `{"movie":"x","rows":1,"seats_per_row":1,"payment_delay_ms":9223372036854775807}`},
			{"payment delay huge", `{"movie":"x","rows":1,"seats_per_row":1,"payment_delay_ms":1e30}`},
			{"payment delay over a minute", `{"movie":"x","rows":1,"seats_per_row":1,"payment_delay_ms":60001}`},
			{"negative payment delay", `{"movie":"x","rows":1,"seats_per_row":1,"payment_delay_ms":-1}`},
			{"bad starts_at", `{"movie":"x","starts_at":"tomorrow","rows":1,"seats_per_row":1}`},
			{"starts_at as number", `{"movie":"x","starts_at":1700000000,"rows":1,"seats_per_row":1}`},
			{"unknown lock", `{"movie":"x","rows":1,"seats_per_row":1,"lock":"zookeeper"}`},
			{"unknown guard", `{"movie":"x","rows":1,"seats_per_row":1,"guard":"maybe"}`},
			{"bad id", `{"id":"no spaces","movie":"x","rows":1,"seats_per_row":1}`},
			{"no movie", `{"rows":1,"seats_per_row":1}`},
			{"movie with control char", `{"movie":"a\u0000b","rows":1,"seats_per_row":1}`},
			{"movie too long", `{"movie":"` + strings.Repeat("m", 201) + `","rows":1,"seats_per_row":1}`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, call(t, "POST", base+"/v1/screenings", tc.body), http.StatusBadRequest, "invalid_request")
			})
		}
		e := wantError(t, call(t, "POST", base+"/v1/screenings", `{"movie":"x","rows":"5","seats_per_row":1}`), http.StatusBadRequest, "invalid_request")
		if !strings.Contains(e.Error.Message, "rows") {
			t.Errorf("message %q does not name the field", e.Error.Message)
		}
		huge := `{"movie":"` + strings.Repeat("m", 70<<10) + `","rows":1,"seats_per_row":1}`
		wantError(t, call(t, "POST", base+"/v1/screenings", huge), http.StatusRequestEntityTooLarge, "request_too_large")
		if after := call(t, "GET", base+"/v1/screenings", "").body; string(after) != string(before) {
			t.Errorf("screenings changed by bad requests:\nbefore %s\nafter  %s", before, after)
		}
	})

	t.Run("bad bookings are rejected and book nothing", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Bad input","rows":2,"seats_per_row":10}`)
		url := base + "/v1/screenings/" + s.ID + "/bookings"
		before, _ := seatsOf(t, base, s.ID)
		eleven := []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "B1"}
		for _, tc := range []struct {
			name, body string
			headers    []string
			status     int
			code       string
		}{
			{"malformed JSON", `{"seats":["A1"],`, nil, 400, "invalid_request"},
			{"empty body", ``, nil, 400, "invalid_request"},
			{"null", `null`, nil, 400, "invalid_request"},
			{"trailing data", bookingBody("al", "A1") + `x`, nil, 400, "invalid_request"},
			{"unknown field", `{"seats":["A1"],"customer":"al","vip":true}`, nil, 400, "invalid_request"},
			{"seats not an array", `{"seats":"A1","customer":"al"}`, nil, 400, "invalid_request"},
			{"seat not a string", `{"seats":[1],"customer":"al"}`, nil, 400, "invalid_request"},
			{"customer not a string", `{"seats":["A1"],"customer":7}`, nil, 400, "invalid_request"},
			{"no seats", bookingBody("al"), nil, 400, "invalid_request"},
			{"11 seats", bookingBody("al", eleven...), nil, 400, "invalid_request"},
			{"repeated seat", bookingBody("al", "A1", "A2", "A1"), nil, 400, "invalid_request"},
			{"seat outside the layout", bookingBody("al", "A1", "C1"), nil, 400, "invalid_request"},
			{"seat number too big", bookingBody("al", "A11"), nil, 400, "invalid_request"},
			{"malformed seat", bookingBody("al", "a1"), nil, 400, "invalid_request"},
			{"seat zero", bookingBody("al", "A0"), nil, 400, "invalid_request"},
			{"empty seat id", bookingBody("al", ""), nil, 400, "invalid_request"},
			{"no customer", `{"seats":["A1"]}`, nil, 400, "invalid_request"},
			{"blank customer", bookingBody("   ", "A1"), nil, 400, "invalid_request"},
			{"overlong customer", bookingBody(strings.Repeat("c", 65), "A1"), nil, 400, "invalid_request"},
			{"control char in customer", bookingBody("al\u0007ice", "A1"), nil, 400, "invalid_request"},
			{"newline in customer", bookingBody("al\nice", "A1"), nil, 400, "invalid_request"},
			{"invalid UTF-8 in customer", `{"seats":["A1"],"customer":"al` + "\xff" + `"}`, nil, 400, "invalid_request"},
			{"oversized body", `{"seats":["A1"],"customer":"` + strings.Repeat("c", 70<<10) + `"}`, nil, 413, "request_too_large"},
			{"JSON sent as text/plain", bookingBody("al", "A1"), []string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
			{"a form body", "seats=A1&customer=al", []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
			{"empty Idempotency-Key", bookingBody("al", "A1"), []string{"Idempotency-Key", ""}, 400, "invalid_request"},
			{"overlong Idempotency-Key", bookingBody("al", "A1"), []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, "invalid_request"},
			{"Idempotency-Key with a tab", bookingBody("al", "A1"), []string{"Idempotency-Key", "a\tb"}, 400, "invalid_request"},
			{"non-ASCII Idempotency-Key", bookingBody("al", "A1"), []string{"Idempotency-Key", "clé"}, 400, "invalid_request"},
			{"two Idempotency-Keys", bookingBody("al", "A1"), []string{"Idempotency-Key", "a", "Idempotency-Key", "b"}, 400, "invalid_request"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wantError(t, call(t, "POST", url, tc.body, tc.headers...), tc.status, tc.code)
			})
		}
		if after, _ := seatsOf(t, base, s.ID); after != before {
			t.Errorf("seat map changed by bad requests:\nbefore %s\nafter  %s", before, after)
		}
		// A key of exactly 255 printable characters is fine.
		if r := call(t, "POST", url, bookingBody("al", "A1"), "Idempotency-Key", strings.Repeat("~", 255)); r.status != http.StatusCreated {
			t.Errorf("255-character key: %d %s", r.status, r.body)
		}
	})

	t.Run("a booking takes its seats, all or nothing", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Book","rows":2,"seats_per_row":5}`)
		url := base + "/v1/screenings/" + s.ID + "/bookings"
		r := call(t, "POST", url, bookingBody("alice", "B2", "A3"))
		if r.status != http.StatusCreated {
			t.Fatalf("book: %d %s", r.status, r.body)
		}
		wantFields(t, r.body, "id", "screening_id", "seats", "customer", "status", "created_at", "token")
		b := decode[booking](t, r)
		if uuid.Validate(b.ID) != nil || b.ScreeningID != s.ID || !slices.Equal(b.Seats, []string{"A3", "B2"}) ||
			b.Customer != "alice" || b.Status != "confirmed" || b.Token == "" || time.Since(b.CreatedAt) > time.Minute {
			t.Errorf("booking %+v", b)
		}
		_, seats := seatsOf(t, base, s.ID)
		if seats["A3"].BookingID != b.ID || seats["B2"].BookingID != b.ID || seats["A3"].Status != "booked" || seats["A4"].Status != "free" {
			t.Errorf("seats after booking: A3 %+v B2 %+v A4 %+v", seats["A3"], seats["B2"], seats["A4"])
		}

		r = call(t, "GET", base+"/v1/bookings/"+b.ID, "")
		wantFields(t, r.body, "id", "screening_id", "seats", "customer", "status", "created_at")
		if got := decode[booking](t, r); got.ID != b.ID || got.Token != "" || !got.CreatedAt.Equal(b.CreatedAt) {
			t.Errorf("GET booking %+v", got)
		}

		before, _ := seatsOf(t, base, s.ID)
		e := wantError(t, call(t, "POST", url, bookingBody("bob", "A4", "B2", "A3")), http.StatusConflict, "seat_taken")
		if !slices.Equal(e.Error.Seats, []string{"A3", "B2"}) {
			t.Errorf("seat_taken lists %v, want [A3 B2]", e.Error.Seats)
		}
		if after, _ := seatsOf(t, base, s.ID); after != before {
			t.Errorf("a refused booking changed the seat map (A4 must stay free)")
		}
	})

	t.Run("cancelling needs the booking's token", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Cancel","rows":1,"seats_per_row":5}`)
		url := base + "/v1/screenings/" + s.ID + "/bookings"
		for i, send := range []func(token string) []string{
			func(token string) []string { return []string{"Authorization", "Bearer " + token} },
			func(token string) []string { return []string{"Authorization", "bearer  " + token + " "} },
		} {
			seatID := []string{"A1", "A2"}[i]
			b := decode[booking](t, call(t, "POST", url, bookingBody("carol", seatID)))
			del := base + "/v1/bookings/" + b.ID
			wantError(t, call(t, "DELETE", del, ""), http.StatusUnauthorized, "unauthorized")
			wantError(t, call(t, "DELETE", del, "", "Authorization", "Basic Zm9vOmJhcg=="), http.StatusUnauthorized, "unauthorized")
			wantError(t, call(t, "DELETE", del, "", "Authorization", "Bearer wrong"), http.StatusForbidden, "forbidden")
			// A token is a secret, and secrets never travel in a URL:
			// even the right one in the query string is no token.
			wantError(t, call(t, "DELETE", del+"?token="+b.Token, ""), http.StatusUnauthorized, "unauthorized")
			if _, seats := seatsOf(t, base, s.ID); seats[seatID].BookingID != b.ID {
				t.Fatalf("a refused cancel freed %s", seatID)
			}
			r := call(t, "DELETE", del, "", send(b.Token)...)
			if r.status != http.StatusNoContent || len(r.body) != 0 {
				t.Fatalf("cancel %d: %d %s", i, r.status, r.body)
			}
			if _, seats := seatsOf(t, base, s.ID); seats[seatID].Status != "free" {
				t.Errorf("seat %s after cancel: %+v", seatID, seats[seatID])
			}
			if got := decode[booking](t, call(t, "GET", del, "")); got.Status != "cancelled" {
				t.Errorf("booking after cancel: %+v", got)
			}
		}
		// The seat can be booked again.
		if r := call(t, "POST", url, bookingBody("dave", "A1")); r.status != http.StatusCreated {
			t.Errorf("booking a cancelled seat: %d %s", r.status, r.body)
		}
	})

	t.Run("an idempotency key replays its booking", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Replay","rows":1,"seats_per_row":5}`)
		url := base + "/v1/screenings/" + s.ID + "/bookings"
		key := "Idempotency-Key"
		first := call(t, "POST", url, bookingBody("erin", "A1", "A2"), key, "order-1")
		if first.status != http.StatusCreated {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		b1 := decode[booking](t, first)
		before, _ := seatsOf(t, base, s.ID)
		// The same request with the seats in another order is the same request.
		again := call(t, "POST", url, bookingBody("erin", "A2", "A1"), key, "order-1")
		if again.status != http.StatusCreated {
			t.Fatalf("replay: %d %s", again.status, again.body)
		}
		if b2 := decode[booking](t, again); b2.ID != b1.ID || b2.Token != b1.Token || !b2.CreatedAt.Equal(b1.CreatedAt) {
			t.Errorf("replay answered %+v, want %+v", b2, b1)
		}
		if after, _ := seatsOf(t, base, s.ID); after != before {
			t.Errorf("a replay changed the seat map")
		}
		wantError(t, call(t, "POST", url, bookingBody("erin", "A3"), key, "order-1"), http.StatusUnprocessableEntity, "idempotency_mismatch")
		wantError(t, call(t, "POST", url, bookingBody("mallory", "A1", "A2"), key, "order-1"), http.StatusUnprocessableEntity, "idempotency_mismatch")
		if after, _ := seatsOf(t, base, s.ID); after != before {
			t.Errorf("a mismatched key changed the seat map")
		}
		// Another key is another request: the seats are taken.
		wantError(t, call(t, "POST", url, bookingBody("erin", "A1", "A2"), key, "order-2"), http.StatusConflict, "seat_taken")
	})

	t.Run("a seat whose lock is held past the lock wait is busy", func(t *testing.T) {
		s := createScreening(t, base, `{"movie":"Busy","rows":1,"seats_per_row":3,"lock":"keyed","payment_delay_ms":1500}`)
		url := base + "/v1/screenings/" + s.ID + "/bookings"
		first := make(chan response, 1)
		go func() { first <- call(t, "POST", url, bookingBody("first", "A1")) }()
		waitInFlight(t, base, 1)
		wantError(t, call(t, "POST", url, bookingBody("second", "A1", "A2")), http.StatusConflict, "seat_busy")
		if r := <-first; r.status != http.StatusCreated {
			t.Errorf("first booking: %d %s", r.status, r.body)
		}
		if _, seats := seatsOf(t, base, s.ID); seats["A2"].Status != "free" {
			t.Errorf("a busy booking took A2")
		}
	})

	t.Run("booking outcomes are counted by strategy", func(t *testing.T) {
		body := string(call(t, "GET", base+"/metrics", "").body)
		for _, want := range []string{
			`seatlock_bookings_total{outcome="confirmed",strategy="keyed+redis"}`,
			`seatlock_bookings_total{outcome="seat_taken",strategy="keyed+redis"}`,
			`seatlock_bookings_total{outcome="seat_busy",strategy="keyed"}`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

// TestAdminToken checks that with ADMIN_TOKEN set, creating a screening
// needs it, and that unsafe strategies need demo mode.
func TestAdminToken(t *testing.T) {
	api := startAPI(t, map[string]string{"ADMIN_TOKEN": "s3cret"})
	url := api.url + "/v1/screenings"
	body := `{"movie":"Admin","rows":1,"seats_per_row":1}`
	before := call(t, "GET", url, "").body
	wantError(t, call(t, "POST", url, body), http.StatusUnauthorized, "unauthorized")
	wantError(t, call(t, "POST", url, body, "Authorization", "s3cret"), http.StatusUnauthorized, "unauthorized")
	wantError(t, call(t, "POST", url, body, "Authorization", "Bearer s3cre"), http.StatusForbidden, "forbidden")
	wantError(t, call(t, "POST", url, body, "Authorization", "Bearer s3cret2"), http.StatusForbidden, "forbidden")
	if after := call(t, "GET", url, "").body; string(after) != string(before) {
		t.Errorf("refused requests created screenings")
	}
	auth := []string{"Authorization", "Bearer s3cret"}
	createScreening(t, api.url, body, auth...)
	// Reading and booking need no admin token.
	if r := call(t, "POST", api.url+"/v1/screenings/demo/bookings", bookingBody("al", "A1")); r.status != http.StatusCreated {
		t.Errorf("booking: %d %s", r.status, r.body)
	}
	// Outside demo mode the unsafe choices are refused.
	for _, unsafe := range []string{`"lock":"none"`, `"guard":"off"`} {
		wantError(t, call(t, "POST", url, `{"movie":"x","rows":1,"seats_per_row":1,`+unsafe+`}`, auth...), http.StatusBadRequest, "invalid_request")
	}
}

// wantFields checks that a JSON object has exactly the given fields.
func wantFields(t *testing.T, body []byte, fields ...string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not a JSON object: %s", body)
	}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Errorf("fields %v, want %v", got, fields)
	}
}

// TestMissingNamesNoStore asks both stores for what does not exist: the
// 404s (and the 400 of a bad cursor) say what is missing in the domain's
// words, the same whichever store answers. call checks that no error
// answer of any test names an adapter.
func TestMissingNamesNoStore(t *testing.T) {
	stores := map[string]map[string]string{
		"memory":   {},
		"postgres": {"DATABASE_URL": testenv.NewDatabase(t), "REDIS_URL": testenv.RedisURL(t)},
	}
	const id = "6f1c9a52-0000-4000-8000-000000000000"
	for name, env := range stores {
		t.Run(name, func(t *testing.T) {
			base := startAPI(t, env).url
			for _, tc := range []struct{ method, path, want string }{
				{"GET", "/v1/screenings/nope", `screening "nope" does not exist`},
				{"GET", "/v1/screenings/nope/seats", `screening "nope" does not exist`},
				{"POST", "/v1/screenings/nope/bookings", `screening "nope" does not exist`},
				{"GET", "/v1/bookings/" + id, `booking "` + id + `" does not exist`},
				{"GET", "/v1/bookings/nope", `booking "nope" does not exist`},
				{"DELETE", "/v1/bookings/" + id, `booking "` + id + `" does not exist`},
			} {
				body := ""
				if tc.method == "POST" {
					body = bookingBody("alice", "A1")
				}
				e := wantError(t, call(t, tc.method, base+tc.path, body, "Authorization", "Bearer x"), http.StatusNotFound, "not_found")
				if e.Error.Message != tc.want {
					t.Errorf("%s %s: message %q, want %q", tc.method, tc.path, e.Error.Message, tc.want)
				}
			}
			// A cursor that decodes to no id a screening can have, and one
			// that decodes to an id no screening has.
			for _, cursor := range []string{"nope", "bm9wZQ"} {
				e := wantError(t, call(t, "GET", base+"/v1/screenings?after="+cursor, ""), http.StatusBadRequest, "invalid_request")
				if want := "after is no cursor of this list"; e.Error.Message != want {
					t.Errorf("cursor %s: message %q, want %q", cursor, e.Error.Message, want)
				}
			}
		})
	}
}
