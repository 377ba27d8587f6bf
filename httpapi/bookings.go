package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/seatlock/seatlock/reservation"
)

// maxIdempotencyKeyLen bounds an Idempotency-Key header.
const maxIdempotencyKeyLen = 255

// handleBookingCreate books seats: 201 with the booking and its token, or
// the error of the table in errors.go. An Idempotency-Key makes a retry
// safe: the same key and body again answers the first booking again.
func handleBookingCreate(svc *reservation.Service, m *metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		key, ok := idempotencyKey(c)
		if !ok {
			return
		}
		var body createBookingJSON
		if !decodeJSON(c, &body) || !upperCaseRows(c, body.Seats) {
			return
		}
		ctx := c.Request.Context()
		// The screening is read first for its strategy, which labels the
		// booking metric: the point of the metric is to compare strategies.
		sc, ok := screeningOf(c, svc)
		if !ok {
			return
		}
		conf, err := svc.Book(ctx, reservation.BookRequest{
			ScreeningID:    sc.ID,
			Seats:          body.Seats,
			Count:          body.Count,
			Adjacent:       body.Adjacent,
			Customer:       body.Customer,
			IdempotencyKey: key,
			QueueToken:     queueToken(c),
		})
		if err != nil {
			respondErr(c, err)
			m.bookingsOf.Get(bookingKey{string(sc.Lock), outcome(err)}).Inc()
			return
		}
		m.bookingsOf.Get(bookingKey{string(sc.Lock), "confirmed"}).Inc()
		out := toBookingJSON(conf.Booking)
		out.Token = conf.Token
		c.Header("Location", "/v1/bookings/"+out.ID)
		writeJSON(c, http.StatusCreated, out)
	}
}

// upperCaseRows answers 400 and returns false when a seat id of a request
// starts with a lower-case letter, naming it and the id that was likely
// meant ("c7": "C7"). The domain refuses such an id too, but can only say
// what a row is; only here, where the client's own spelling is at hand,
// can the answer suggest the fix.
func upperCaseRows(c *gin.Context, seats []string) bool {
	for _, id := range seats {
		if id != "" && id[0] >= 'a' && id[0] <= 'z' {
			respondCode(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf(
				"seat id %q: rows are upper-case letters A-Z (did you mean %q?)", clip(id, 16), clip(strings.ToUpper(id[:1])+id[1:], 16)))
			return false
		}
	}
	return true
}

// outcome names a failed booking for the bookings metric by its error code.
func outcome(err error) string {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.code
		}
	}
	return codeInternal
}

// idempotencyKey returns the request's Idempotency-Key, "" when there is
// none. A key must be 1 to 255 printable ASCII characters; otherwise it
// answers 400 and returns false.
func idempotencyKey(c *gin.Context) (string, bool) {
	values := c.Request.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		return "", true
	}
	key := values[0]
	valid := len(values) == 1 && key != "" && len(key) <= maxIdempotencyKeyLen
	for i := 0; valid && i < len(key); i++ {
		valid = key[i] >= ' ' && key[i] <= '~'
	}
	if !valid {
		respondCode(c, http.StatusBadRequest, codeInvalid, "Idempotency-Key must be one header of 1 to 255 printable ASCII characters")
		return "", false
	}
	return key, true
}

// bookingID returns the booking id of the path. The server issues ids in
// the canonical form of a uuid only; any other spelling of one (upper case,
// braces, "urn:uuid:", no hyphens) is answered 404 here, so that every
// store sees the same ids and none is handed a form it cannot parse.
func bookingID(c *gin.Context) (string, bool) { return uuidParam(c, "booking") }

// uuidParam returns the path's id if it is a uuid in canonical form, and
// otherwise answers 404 "<what> \"<id>\" does not exist".
func uuidParam(c *gin.Context, what string) (string, bool) {
	id := c.Param("id")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		respondCode(c, http.StatusNotFound, codeNotFound, fmt.Sprintf("%s %q does not exist", what, clip(id, 64)))
		return "", false
	}
	return id, true
}

// handleBookingGet answers a booking, without its token.
func handleBookingGet(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := bookingID(c)
		if !ok {
			return
		}
		b, err := svc.Booking(c.Request.Context(), id)
		if err != nil {
			respondErr(c, err)
			return
		}
		writeJSON(c, http.StatusOK, toBookingJSON(b))
	}
}

// handleBookingCancel cancels a booking with its token, which the client
// sends as "Authorization: Bearer <token>" (the documented way) or in an
// X-Booking-Token header. Never in the URL: a query string ends up in
// access logs, proxies and browser history, so ?token= is ignored and the
// request is answered 401 like one without a token. The service answers
// 401 for no token, 403 for a wrong one and 404 for an unknown booking.
func handleBookingCancel(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := bookingID(c)
		if !ok {
			return
		}
		// The token counts only in the Authorization header: anywhere else
		// (a query string, the body, another header) it is no token, so
		// that no client learns to put a secret where logs keep it.
		token, _ := bearerToken(c.Request)
		if err := svc.Cancel(c.Request.Context(), id, token); err != nil {
			respondErr(c, err)
			return
		}
		c.Status(http.StatusNoContent)
	}
}
