package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/reservation"
)

// TestErrorTable checks the one mapping from domain errors to answers,
// wrapped as the service and stores wrap them; that a client reads the
// domain's words and never the wrapping (which names the store or the
// driver: "memory: ...", "postgres: ..."); and that 5xx answers carry a
// fixed message rather than the cause.
// Every domain error that the table shows to clients has a message, also
// as a store wraps it: a kind added to the table but not to
// reservation.Message would answer an empty one.
func TestErrorTableMessages(t *testing.T) {
	for _, k := range errorKinds {
		if !k.showDetail {
			continue
		}
		err := fmt.Errorf("memory: screening %q: %w", "x", k.err)
		if reservation.Message(err) == "" {
			t.Errorf("%s (%v): no message for a client", k.code, k.err)
		}
	}
}

func TestErrorTable(t *testing.T) {
	secret := "dial tcp 10.0.0.7:5432: SELECT * FROM bookings"
	for _, tc := range []struct {
		err     error
		status  int
		code    string
		message string // "" for the fixed message of a 5xx
	}{
		{fmt.Errorf("seat %q: %w", "Z9", reservation.ErrInvalid), 400, "invalid_request", "invalid request"},
		{fmt.Errorf("postgres: get: %w", reservation.ErrNotFound), 404, "not_found", "not found"},
		{reservation.ErrConflict, 409, "conflict", "conflict"},
		{&reservation.SeatsTakenError{Seats: []string{"C7"}}, 409, "seat_taken", "seats already booked: C7"},
		{reservation.ErrSeatBusy, 409, "seat_busy", "seat busy"},
		{&reservation.SeatsHeldError{Seats: []string{"C7"}}, 409, "seat_held", "seats held by someone else: C7"},
		{&reservation.SeatsBusyError{Seats: []string{"C7"}}, 409, "seat_busy", "seats being taken by someone else: C7"},
		{reservation.ErrSoldOut, 409, "sold_out", "sold out"},
		{reservation.ErrHoldExpired, 409, "hold_expired", "hold expired"},
		{fmt.Errorf("lost: %w", reservation.ErrLockLost), 409, "lock_lost", "lock lost"},
		{reservation.ErrIdempotencyMismatch, 422, "idempotency_mismatch", "idempotency key reused with a different request"},
		{reservation.ErrUnauthorized, 401, "unauthorized", "unauthorized"},
		{reservation.ErrForbidden, 403, "forbidden", "forbidden"},
		{fmt.Errorf("store: %w: %s", reservation.ErrUnavailable, secret), 503, "unavailable", ""},
		{fmt.Errorf("book: %w", context.Canceled), 503, "unavailable", ""},
		{context.DeadlineExceeded, 503, "unavailable", ""},
		{errors.New(secret), 500, "internal", ""},
	} {
		// Every error, also as each store wraps it on its way up.
		for _, err := range []error{tc.err, fmt.Errorf("memory: screening %q: %w", "x", tc.err), fmt.Errorf("postgres: book: %w", tc.err)} {
			t.Run(tc.code, func(t *testing.T) {
				w := httptest.NewRecorder()
				c, _ := gin.CreateTestContext(w)
				respondErr(c, err)
				var body struct {
					Error struct {
						Code, Message string
						Seats         []string
					}
				}
				if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
					t.Fatal(err)
				}
				if w.Code != tc.status || body.Error.Code != tc.code {
					t.Errorf("%v: answered %d %s, want %d %s", err, w.Code, body.Error.Code, tc.status, tc.code)
				}
				want := tc.message
				if want == "" {
					want = msgInternal
					if tc.status == http.StatusServiceUnavailable {
						want = msgUnavailable
					}
				}
				if body.Error.Message != want {
					t.Errorf("%v: message %q, want %q", err, body.Error.Message, want)
				}
				if strings.Contains(w.Body.String(), "10.0.0.7") || strings.Contains(w.Body.String(), "memory") || strings.Contains(w.Body.String(), "postgres") {
					t.Errorf("answer leaks the cause or the store: %s", w.Body)
				}
				if tc.code == "seat_taken" && (len(body.Error.Seats) != 1 || body.Error.Seats[0] != "C7") {
					t.Errorf("seat_taken lists %v", body.Error.Seats)
				}
				if logged := len(c.Errors) > 0; logged != (tc.status >= 500) {
					t.Errorf("error attached for the log: %v, want it for 5xx only", logged)
				}
			})
		}
	}
}

// TestRecoverPanics checks that a panicking handler answers a JSON 500
// without details, and logs the panic and the request line, both with the
// request's id.
func TestRecoverPanics(t *testing.T) {
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(observe(logger, newMetrics(prometheus.NewRegistry())), recoverPanics(logger))
	r.GET("/boom", func(*gin.Context) { panic("secret detail") })

	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/boom", nil)
	req.Header.Set("X-Request-ID", "boom-1")
	r.ServeHTTP(w, req)
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "secret") ||
		!strings.Contains(w.Body.String(), `"code":"internal"`) {
		t.Errorf("answer %d %s", w.Code, w.Body)
	}
	if !strings.Contains(log.String(), "secret detail") || !strings.Contains(log.String(), "status=500") {
		t.Errorf("log lacks the panic or the request line:\n%s", log.String())
	}
	if n := strings.Count(log.String(), "id=boom-1 "); n != 2 {
		t.Errorf("the request's id is in %d log lines, want the panic's and the request's:\n%s", n, log.String())
	}
	if id := w.Header().Get("X-Request-ID"); id != "boom-1" {
		t.Errorf("answer's X-Request-ID %q, want the client's", id)
	}
}

// TestNewServerSharesRegistry checks that two servers on one registry do
// not panic but share their series.
func TestNewServerSharesRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := reservation.NewService(nil, reservation.Options{})
	NewServer(svc, Options{Registry: reg})
	h := NewServer(svc, Options{Registry: reg})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
	if w.Code != http.StatusOK || w.Body.String() != "{\"status\":\"ok\"}\n" {
		t.Errorf("healthz: %d %s", w.Code, w.Body)
	}
}
