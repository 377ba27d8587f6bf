package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// hostileIDs are path segments an attacker or a broken client might send
// where a screening or booking id goes. Every one must be a clean 4xx.
var hostileIDs = []string{
	"%00", "%0A", "%0D%0AX-Injected:%201", "%7F", "%FF", "%C0%AE%C0%AE",
	"..%2F..%2Fx", "..", "%2e%2e", "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "..%2Fscreenings%2Ffuzz",
	"fuzz%3Bdrop", "'%20OR%201=1--", "%22%7D%7B", "%25", "%25%30%30",
	strings.Repeat("x", 10_000), strings.Repeat("%F0%9F%8E%AC", 500),
	"FUZZ", "fuzz%20", "%20fuzz", "fuzz%E2%80%8B", "%E2%80%AEzzuf", "f%C3%BCzz", "fu%CC%88zz",
	"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
	"-1", "99999999999999999999999999", "1e400", "NaN", "null", "%7B%7D",
}

// TestHostileIDs sends every hostile id to every route that takes one:
// answers are 404 (or 401 for a cancel without a token, 400 for a booking
// body), in the contract's shape, and nothing changes.
func TestHostileIDs(t *testing.T) {
	hs := newHarness(t, httpapi.Options{Events: httpapi.NewHub(0)})
	auth := "Bearer " + strings.Repeat("0", 64)
	for _, id := range hostileIDs {
		for _, tc := range []struct {
			method, path, body, auth string
			status                   []int
		}{
			{"GET", "/v1/screenings/" + id, "", "", []int{404}},
			{"GET", "/v1/screenings/" + id + "/seats", "", "", []int{404}},
			{"GET", "/v1/screenings/" + id + "/events", "", "", []int{404}},
			{"POST", "/v1/screenings/" + id + "/bookings", `{"seats":["B1"],"customer":"x"}`, "", []int{404}},
			{"GET", "/v1/bookings/" + id, "", "", []int{404}},
			{"DELETE", "/v1/bookings/" + id, "", auth, []int{404}},
			{"DELETE", "/v1/bookings/" + id, "", "", []int{404, 401}},
		} {
			name := tc.method + " " + tc.path
			if len(name) > 80 {
				name = name[:80]
			}
			t.Run(name, func(t *testing.T) {
				r, ok := newRequest(tc.method, tc.path, []byte(tc.body))
				if !ok {
					t.Fatalf("cannot build %s", tc.path)
				}
				if tc.auth != "" {
					r.Header.Set("Authorization", tc.auth)
				}
				w := hs.serve(t, r)
				if !slices.Contains(tc.status, w.Code) {
					t.Errorf("status %d, want one of %v: %s", w.Code, tc.status, w.Body)
				}
			})
		}
	}
}

// TestHostileRequests covers what the table tests of cmd/api leave out:
// the read routes, query strings, odd methods, bodies where none belong,
// repeated headers and the admin token's edge cases.
func TestHostileRequests(t *testing.T) {
	hs := newHarness(t, httpapi.Options{AdminToken: adminToken})
	booking := "/v1/bookings/" + hs.booking.Booking.ID
	create := `{"movie":"x","rows":1,"seats_per_row":1}`
	book := `{"seats":["B1"],"customer":"x"}`
	for _, tc := range []struct {
		name, method, target, body string
		headers                    []string // name, value pairs; a name may repeat
		status                     int
		code                       string // "" for a 2xx
	}{
		{"list with junk query", "GET", "/v1/screenings?offset=1e400&x=%00&x=%FF", "", nil, 200, ""},
		{"list with limit 0", "GET", "/v1/screenings?limit=0", "", nil, 400, "invalid_request"},
		{"list with limit -1", "GET", "/v1/screenings?limit=-1", "", nil, 400, "invalid_request"},
		{"list with limit 1001", "GET", "/v1/screenings?limit=1001", "", nil, 400, "invalid_request"},
		{"list with limit 1e3", "GET", "/v1/screenings?limit=1e3", "", nil, 400, "invalid_request"},
		{"list with limit 1000", "GET", "/v1/screenings?limit=1000", "", nil, 200, ""},
		{"list after a made-up cursor", "GET", "/v1/screenings?after=bm8tc3VjaA", "", nil, 400, "invalid_request"},
		{"list after a cursor that is not base64", "GET", "/v1/screenings?after=%00", "", nil, 400, "invalid_request"},
		{"list with a body", "GET", "/v1/screenings", `{"x":` + strings.Repeat("[", 5000), nil, 200, ""},
		{"seat map with query", "GET", "/v1/screenings/fuzz/seats?seat=A1'--", "", nil, 200, ""},
		{"healthz with query and body", "GET", "/healthz?verbose=%00", "junk", nil, 200, ""},
		{"readyz with query", "GET", "/readyz?timeout=-1", "", nil, 200, ""},
		{"booking read with token query", "GET", booking + "?token=x", "", nil, 200, ""},
		{"trailing slash on a booking", "GET", booking + "/", "", nil, 404, "not_found"},
		{"double slash", "GET", "//v1/screenings", "", nil, 404, "not_found"},
		{"dot segment", "GET", "/v1/./screenings", "", nil, 404, "not_found"},
		{"upper-case path", "GET", "/V1/SCREENINGS", "", nil, 404, "not_found"},
		{"unknown method", "BREW", "/v1/screenings", "", nil, 405, "method_not_allowed"},
		{"long unknown method", strings.Repeat("M", 200), "/v1/screenings", "", nil, 405, "method_not_allowed"},
		{"PUT a screening", "PUT", "/v1/screenings/fuzz", create, nil, 405, "method_not_allowed"},
		{"PATCH a booking", "PATCH", booking, `{"status":"cancelled"}`, nil, 405, "method_not_allowed"},
		{"POST a booking id", "POST", booking, "", nil, 405, "method_not_allowed"},
		{"DELETE a seat map", "DELETE", "/v1/screenings/fuzz/seats", "", nil, 405, "method_not_allowed"},
		{"query cannot add seats", "POST", "/v1/screenings/fuzz/bookings?seats=A2&customer=x", `{"customer":"x"}`, nil, 400, "invalid_request"},
		{"two Authorization headers, good first", "POST", "/v1/screenings", create,
			[]string{"Authorization", "Bearer " + adminToken, "Authorization", "Bearer x"}, 201, ""},
		{"two Authorization headers, bad first", "POST", "/v1/screenings", create,
			[]string{"Authorization", "Bearer x", "Authorization", "Bearer " + adminToken}, 403, "forbidden"},
		{"admin token as a query", "POST", "/v1/screenings?token=" + adminToken, create, nil, 401, "unauthorized"},
		{"admin token with a NUL", "POST", "/v1/screenings", create, []string{"Authorization", "Bearer " + adminToken + "\x00"}, 403, "forbidden"},
		{"admin token, upper case", "POST", "/v1/screenings", create, []string{"Authorization", "Bearer " + strings.ToUpper(adminToken)}, 403, "forbidden"},
		{"admin token, 1 MB", "POST", "/v1/screenings", create, []string{"Authorization", "Bearer " + strings.Repeat("a", 1<<20)}, 403, "forbidden"},
		// A browser sends these bodies to another site without a preflight.
		{"a form body", "POST", "/v1/screenings/fuzz/bookings", "seats=B1&customer=x",
			[]string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"JSON sent as text/plain", "POST", "/v1/screenings/fuzz/bookings", book,
			[]string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"JSON sent as multipart", "POST", "/v1/screenings/fuzz/bookings", book,
			[]string{"Content-Type", "multipart/form-data; boundary=x"}, 415, "unsupported_media_type"},
		{"JSON sent without a Content-Type", "POST", "/v1/screenings/fuzz/bookings", book,
			[]string{"Content-Type", ""}, 415, "unsupported_media_type"},
		{"a screening sent as text/plain", "POST", "/v1/screenings", create,
			[]string{"Authorization", "Bearer " + adminToken, "Content-Type", "text/plain;charset=utf-8"}, 415, "unsupported_media_type"},
		{"a hold sent as text/plain", "POST", "/v1/screenings/fuzz/holds", book,
			[]string{"Content-Type", "text/plain"}, 415, "unsupported_media_type"},
		{"JSON with a charset", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B3"],"customer":"x"}`,
			[]string{"Content-Type", "Application/JSON; charset=utf-8"}, 201, ""},
		{"gzip body", "POST", "/v1/screenings/fuzz/bookings", "\x1f\x8b\x08\x00junk", []string{"Content-Encoding", "gzip"}, 400, "invalid_request"},
		{"UTF-8 BOM", "POST", "/v1/screenings/fuzz/bookings", "\ufeff" + book, nil, 400, "invalid_request"},
		{"UTF-16 body", "POST", "/v1/screenings/fuzz/bookings", "\xff\xfe{\x00}\x00", nil, 400, "invalid_request"},
		{"deep nesting", "POST", "/v1/screenings/fuzz/bookings", `{"seats":` + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + `}`, nil, 400, "invalid_request"},
		{"seats as an object", "POST", "/v1/screenings/fuzz/bookings", `{"seats":{"B1":true},"customer":"x"}`, nil, 400, "invalid_request"},
		{"seat as null", "POST", "/v1/screenings/fuzz/bookings", `{"seats":[null],"customer":"x"}`, nil, 400, "invalid_request"},
		{"seat with a NUL", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1\u0000"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"full-width seat", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["Ｂ１"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"seat number huge", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B18446744073709551617"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"seats repeated in another case", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1","b1"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"customer a lone escaped low surrogate", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"customer":"\udc00"}`, nil, 400, "invalid_request"},
		{"customer a lone escaped high surrogate", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"customer":"a\ud800b"}`, nil, 400, "invalid_request"},
		{"customer only zero-width", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"customer":"\u200b"}`, nil, 400, "invalid_request"},
		{"customer with bidi override", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"customer":"\u202eevil"}`, nil, 400, "invalid_request"},
		// Field names are matched exactly and once: encoding/json alone
		// would book B3 here, or read "Seats" as "seats".
		{"repeated key", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["A1"],"seats":["B3"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"repeated customer", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B3"],"customer":"x","customer":"y"}`, nil, 400, "invalid_request"},
		{"field name in another case", "POST", "/v1/screenings/fuzz/bookings", `{"Seats":["B3"],"customer":"x"}`, nil, 400, "invalid_request"},
		{"field name in upper case", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B3"],"CUSTOMER":"x"}`, nil, 400, "invalid_request"},
		{"screening field name in another case", "POST", "/v1/screenings", `{"Movie":"x","rows":1,"seats_per_row":1}`, []string{"Authorization", "Bearer " + adminToken}, 400, "invalid_request"},
		{"screening field repeated", "POST", "/v1/screenings", `{"movie":"x","rows":1,"rows":2,"seats_per_row":1}`, []string{"Authorization", "Bearer " + adminToken}, 400, "invalid_request"},
		{"field name with a Kelvin sign", "POST", "/v1/screenings/fuzz/bookings", `{"seats":["B3"],"customer":"x","Key":1}`, nil, 400, "invalid_request"},
		{"Idempotency-Key with NUL", "POST", "/v1/screenings/fuzz/bookings", book, []string{"Idempotency-Key", "a\x00b"}, 400, "invalid_request"},
		{"Idempotency-Key with DEL", "POST", "/v1/screenings/fuzz/bookings", book, []string{"Idempotency-Key", "a\x7fb"}, 400, "invalid_request"},
		{"Idempotency-Key of another request", "POST", "/v1/screenings/fuzz/bookings", book, []string{"Idempotency-Key", "first-key"}, 422, "idempotency_mismatch"},
		{"cancel, two Authorization headers", "DELETE", booking, "", []string{"Authorization", "Bearer x", "Authorization", "Bearer y"}, 403, "forbidden"},
		{"cancel, token with CR", "DELETE", booking, "", []string{"Authorization", "Bearer x\ry"}, 403, "forbidden"},
		{"cancel, token in a repeated query", "DELETE", booking + "?token=&token=x", "", nil, 401, "unauthorized"},
		// Secrets travel only in headers: the right token in the URL is
		// as good as none.
		{"cancel, right token in the query", "DELETE", booking + "?token=" + hs.booking.Token, "", nil, 401, "unauthorized"},
		{"cancel, right token as access_token", "DELETE", booking + "?access_token=" + hs.booking.Token, "", nil, 401, "unauthorized"},
		{"cancel, hash of the token", "DELETE", booking, "", []string{"Authorization", "Bearer " + hexSum(hs.booking.Token)}, 403, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := newRequest(tc.method, tc.target, []byte(tc.body))
			if !ok {
				t.Fatalf("cannot build %s", tc.target)
			}
			for i := 0; i+1 < len(tc.headers); i += 2 {
				if http.CanonicalHeaderKey(tc.headers[i]) == "Content-Type" {
					r.Header.Set(tc.headers[i], tc.headers[i+1]) // in place of newRequest's
					continue
				}
				r.Header.Add(tc.headers[i], tc.headers[i+1])
			}
			w := hs.serve(t, r)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			if tc.code != "" && !strings.Contains(w.Body.String(), `"code":"`+tc.code+`"`) {
				t.Errorf("body %s, want code %s", w.Body, tc.code)
			}
		})
	}
}

// TestBookingTokens checks the booking token: only the exact token cancels
// (401 without one, 403 for a wrong one of any length, another booking's
// token, or the stored hash), and the store keeps only its SHA-256.
func TestBookingTokens(t *testing.T) {
	hs := newHarness(t, httpapi.Options{})
	other, err := hs.svc.Book(context.Background(), reservation.BookRequest{ScreeningID: "fuzz", Seats: []string{"C5"}, Customer: "other"})
	if err != nil {
		t.Fatal(err)
	}
	token := hs.booking.Token
	flip := []byte(token)
	flip[len(flip)-1] ^= 1
	target := "/v1/bookings/" + hs.booking.Booking.ID
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"none", "", 401},
		{"equal length, last byte wrong", string(flip), 403},
		{"equal length, all zeros", strings.Repeat("0", len(token)), 403},
		{"a prefix", token[:len(token)-1], 403},
		{"one byte more", token + "0", 403},
		{"upper case", strings.ToUpper(token), 403},
		{"another booking's", other.Token, 403},
		{"the stored hash", hexSum(token), 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRequest("DELETE", target, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if w := hs.serve(t, r); w.Code != tc.status {
				t.Errorf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
		})
	}
	_, hash, err := hs.store.Booking(context.Background(), hs.booking.Booking.ID)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte(token)); string(hash) != string(sum[:]) || strings.Contains(string(hash), token) {
		t.Errorf("the store keeps %x, want only the SHA-256 of the token", hash)
	}
	r, _ := newRequest("DELETE", target, nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent {
		t.Errorf("the right token: %d %s", w.Code, w.Body)
	}
}

// TestBackendDownLeaksNothing runs the real Postgres store against a port
// where nothing listens: every route answers 503 unavailable (or a 4xx
// that needs no backend), and no answer carries the driver's text.
func TestBackendDownLeaksNothing(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/nothing?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.New(pool)
	t.Cleanup(store.Close)
	svc := reservation.NewService(store, reservation.Options{
		Lockers:     map[reservation.Strategy]reservation.SeatLocker{reservation.LockKeyed: locking.Keyed(&keyedlock.Mutex{})},
		DefaultLock: reservation.LockKeyed,
		LockHealth: func(context.Context) error {
			return reservation.ErrUnavailable
		},
	})
	h := httpapi.NewServer(svc, httpapi.Options{ReadyTimeout: 2 * time.Second})
	id := "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/readyz", ""},
		{"GET", "/v1/screenings", ""},
		{"POST", "/v1/screenings", `{"movie":"x","rows":1,"seats_per_row":1}`},
		{"GET", "/v1/screenings/demo", ""},
		{"GET", "/v1/screenings/demo/seats", ""},
		{"POST", "/v1/screenings/demo/bookings", `{"seats":["A1"],"customer":"x"}`},
		{"GET", "/v1/bookings/" + id, ""},
		{"DELETE", "/v1/bookings/" + id + "?token=x", ""},
	} {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			r, _ := newRequest(tc.method, tc.target, []byte(tc.body))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503: %s", w.Code, w.Body)
			}
			checkErrorBody(t, w.Code, w.Header().Get("Content-Type"), w.Body.Bytes())
		})
	}
}

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestSecretsOnlyInAuthorization puts the right secret, a booking's token
// or the admin token, in every other place a client might put one: the
// query string under the usual names, a field of the body (JSON or a form),
// other headers, a cookie, Authorization without the Bearer scheme. Each
// is answered 401 as if there were no secret, and changes nothing; only
// "Authorization: Bearer <secret>" counts. A place that the server starts
// to read fails the test.
func TestSecretsOnlyInAuthorization(t *testing.T) {
	type place struct {
		name, query, body, contentType string
		header                         []string
	}
	places := func(secret string) []place {
		return []place{
			{name: "query token", query: "token=" + secret},
			{name: "query access_token", query: "access_token=" + secret},
			{name: "query auth", query: "auth=" + secret},
			{name: "query authorization", query: "authorization=Bearer%20" + secret},
			{name: "JSON body", body: `{"token":"` + secret + `"}`, contentType: "application/json"},
			{name: "form body", body: "token=" + secret, contentType: "application/x-www-form-urlencoded"},
			{name: "X-Booking-Token", header: []string{"X-Booking-Token", secret}},
			{name: "X-Admin-Token", header: []string{"X-Admin-Token", secret}},
			{name: "X-Auth-Token", header: []string{"X-Auth-Token", secret}},
			{name: "X-Api-Key", header: []string{"X-Api-Key", secret}},
			{name: "cookie", header: []string{"Cookie", "token=" + secret}},
			{name: "Proxy-Authorization", header: []string{"Proxy-Authorization", "Bearer " + secret}},
			{name: "Authorization without a scheme", header: []string{"Authorization", secret}},
			{name: "Authorization Token scheme", header: []string{"Authorization", "Token " + secret}},
		}
	}
	send := func(t *testing.T, hs *harness, method, path, body string, p place) *httptest.ResponseRecorder {
		t.Helper()
		if p.query != "" {
			path += "?" + p.query
		}
		if p.body != "" {
			body = p.body
		}
		r, ok := newRequest(method, path, []byte(body))
		if !ok {
			t.Fatalf("cannot build %s %s", method, path)
		}
		if p.contentType != "" {
			r.Header.Set("Content-Type", p.contentType)
		}
		for i := 0; i+1 < len(p.header); i += 2 {
			r.Header.Set(p.header[i], p.header[i+1])
		}
		return hs.serve(t, r)
	}

	t.Run("booking token", func(t *testing.T) {
		hs := newHarness(t, httpapi.Options{})
		path := "/v1/bookings/" + hs.booking.Booking.ID
		for _, p := range places(hs.booking.Token) {
			if w := send(t, hs, "DELETE", path, "", p); w.Code != http.StatusUnauthorized {
				t.Errorf("the token in the %s: %d, want 401: %s", p.name, w.Code, w.Body)
			}
		}
		bearer := place{name: "Authorization", header: []string{"Authorization", "Bearer " + hs.booking.Token}}
		if w := send(t, hs, "DELETE", path, "", bearer); w.Code != http.StatusNoContent {
			t.Errorf("the token in the Authorization header: %d, want 204: %s", w.Code, w.Body)
		}
	})
	t.Run("admin token", func(t *testing.T) {
		hs := newHarness(t, httpapi.Options{AdminToken: adminToken})
		const create = `{"movie":"Secret","rows":1,"seats_per_row":1}`
		for _, p := range places(adminToken) {
			if p.body != "" {
				// The token as a field of the screening itself.
				p.body = `{"movie":"Secret","rows":1,"seats_per_row":1,"token":"` + adminToken + `"}`
			}
			if w := send(t, hs, "POST", "/v1/screenings", create, p); w.Code != http.StatusUnauthorized {
				t.Errorf("the admin token in the %s: %d, want 401: %s", p.name, w.Code, w.Body)
			}
		}
		bearer := place{name: "Authorization", header: []string{"Authorization", "Bearer " + adminToken}}
		if w := send(t, hs, "POST", "/v1/screenings", create, bearer); w.Code != http.StatusCreated {
			t.Errorf("the admin token in the Authorization header: %d, want 201: %s", w.Code, w.Body)
		}
	})
}

// TestRefusalsNameWhatTheyRefuse: a refused body's message names the field
// or the seat id it refuses, and the rule, so that a client can fix the
// request from the message alone.
func TestRefusalsNameWhatTheyRefuse(t *testing.T) {
	hs := newHarness(t, httpapi.Options{})
	for _, tc := range []struct {
		name, path, body string
		want             []string // every one in the message
	}{
		{"unknown field", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"customer":"x","vip":true}`,
			[]string{`field \"vip\"`, "does not take"}},
		{"a field in another case", "/v1/screenings/fuzz/bookings", `{"Seats":["B1"],"customer":"x"}`,
			[]string{`field \"Seats\"`, "case-sensitive", `did you mean \"seats\"`}},
		{"a field named twice", "/v1/screenings/fuzz/bookings", `{"seats":["B1"],"seats":["B2"],"customer":"x"}`,
			[]string{`field \"seats\" twice`}},
		{"unknown screening field", "/v1/screenings", `{"movie":"m","rows":1,"seats_per_row":1,"Hold_TTL_ms":5000}`,
			[]string{`field \"Hold_TTL_ms\"`, `did you mean \"hold_ttl_ms\"`}},
		{"a lower-case row", "/v1/screenings/fuzz/bookings", `{"seats":["B1","c7"],"customer":"x"}`,
			[]string{`seat id \"c7\"`, "upper-case", `did you mean \"C7\"`}},
		{"a lower-case row in a hold", "/v1/screenings/fuzz/holds", `{"seats":["b2"],"customer":"x"}`,
			[]string{`seat id \"b2\"`, "upper-case", `did you mean \"B2\"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := newRequest("POST", tc.path, []byte(tc.body))
			w := hs.serve(t, r)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", w.Code, w.Body)
			}
			for _, want := range tc.want {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("answer %s lacks %s", strings.TrimSpace(w.Body.String()), want)
				}
			}
		})
	}
}
