package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// Error codes of the API that do not come from a domain error.
const (
	codeInvalid          = "invalid_request"
	codeTooLarge         = "request_too_large"
	codeMediaType        = "unsupported_media_type"
	codeNotFound         = "not_found"
	codeMethodNotAllowed = "method_not_allowed"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeUnavailable      = "unavailable"
	codeRateLimited      = "rate_limited"
	codeInternal         = "internal"
)

// Fixed messages of the answers whose cause a client must not see.
const (
	msgUnavailable = "a backend service is unavailable; nothing was booked, try again later"
	msgInternal    = "internal server error"
)

// errorKind is one row of the table: the status and code a domain error
// becomes, and whether the error's own text may be shown to the client.
type errorKind struct {
	err        error
	status     int
	code       string
	showDetail bool
}

// errorKinds maps every domain error to its answer, in one place. The first
// row that matches (errors.Is) wins, so more specific errors come first.
// Errors matching no row are 500 internal.
var errorKinds = []errorKind{
	{reservation.ErrInvalid, http.StatusBadRequest, codeInvalid, true},
	{reservation.ErrNotFound, http.StatusNotFound, codeNotFound, true},
	{reservation.ErrSeatTaken, http.StatusConflict, "seat_taken", true},
	{reservation.ErrSeatHeld, http.StatusConflict, "seat_held", true},
	{reservation.ErrSoldOut, http.StatusConflict, "sold_out", true},
	{reservation.ErrHoldExpired, http.StatusConflict, "hold_expired", true},
	{reservation.ErrSeatBusy, http.StatusConflict, "seat_busy", true},
	{reservation.ErrLockLost, http.StatusConflict, "lock_lost", true},
	{reservation.ErrStaleToken, http.StatusConflict, "lock_lost", true},
	{reservation.ErrConflict, http.StatusConflict, "conflict", true},
	{reservation.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, "idempotency_mismatch", true},
	{reservation.ErrNoQueue, http.StatusConflict, "no_queue", true},
	{reservation.ErrNotAdmitted, http.StatusForbidden, "not_admitted", true},
	{reservation.ErrAdmissionExpired, http.StatusForbidden, "admission_expired", true},
	{reservation.ErrUnauthorized, http.StatusUnauthorized, codeUnauthorized, true},
	{reservation.ErrForbidden, http.StatusForbidden, codeForbidden, true},
	{reservation.ErrLimit, http.StatusServiceUnavailable, "limit_reached", true},
	{reservation.ErrUnavailable, http.StatusServiceUnavailable, codeUnavailable, false},
	// The request's context ended: the client went away or a deadline
	// passed. The client rarely sees this answer; the log line does.
	{context.Canceled, http.StatusServiceUnavailable, codeUnavailable, false},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, codeUnavailable, false},
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Seats   []string `json:"seats,omitempty"` // with seat_taken and seat_held
	// Position is the queue position of a buyer not admitted yet, with
	// not_admitted when the buyer's entry waits.
	Position *int `json:"position,omitempty"`
}

// respondErr answers with the status and code of err's row in errorKinds.
// For 5xx answers the error is attached to the gin context, so that the
// request's log line carries it, and the client sees a fixed message.
func respondErr(c *gin.Context, err error) {
	kind := errorKind{status: http.StatusInternalServerError, code: codeInternal}
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			kind = k
			break
		}
	}
	d := errorDetail{Code: kind.code}
	switch {
	case kind.showDetail:
		// The domain's words only: the chain around a domain error names
		// the adapter and the operation (memory: ..., postgres: ...).
		d.Message = reservation.Message(err)
	case kind.status == http.StatusServiceUnavailable:
		d.Message = msgUnavailable
	default:
		d.Message = msgInternal
	}
	var taken *reservation.SeatsTakenError
	var held *reservation.SeatsHeldError
	var waiting *reservation.NotAdmittedError
	switch {
	case errors.As(err, &taken):
		d.Seats = taken.Seats
	case errors.As(err, &held):
		d.Seats = held.Seats
	case errors.As(err, &waiting):
		d.Position = &waiting.Position
	}
	if kind.status >= 500 {
		_ = c.Error(err)
	}
	if errors.Is(err, reservation.ErrLimit) {
		// A bound of the server clears as screenings play, hours apart,
		// not in seconds. Clients that honour Retry-After should not
		// hammer.
		c.Header("Retry-After", limitRetryAfter)
	}
	abortJSON(c, kind.status, errorBody{Error: d})
}

// respondCode answers with an error that the HTTP layer found itself (bad
// JSON, a missing admin token): its message is meant for the client.
func respondCode(c *gin.Context, status int, code, message string) {
	abortJSON(c, status, errorBody{Error: errorDetail{Code: code, Message: message}})
}

// retryAfter is the Retry-After of a 503 or 429 whose handler set none: a
// backend outage or an exhausted pool rarely clears in less, and a client
// that waits spares the backend a storm of retries.
const retryAfter = "2"

// limitRetryAfter is the Retry-After of 503 limit_reached: an hour.
const limitRetryAfter = "3600"

// authChallenge is the WWW-Authenticate of every 401: the scheme the
// client must use (RFC 9110 requires a challenge on a 401).
const authChallenge = `Bearer realm="seatlock"`

// abortJSON ends the request with an error answer. Every answer that means
// "not now" (503, 429) says when to come back, and every 401 says how to
// authenticate, whether the admin token or a booking's or hold's token is
// missing.
func abortJSON(c *gin.Context, status int, body errorBody) {
	if (status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests) && c.Writer.Header().Get("Retry-After") == "" {
		c.Header("Retry-After", retryAfter)
	}
	if status == http.StatusUnauthorized {
		c.Header("WWW-Authenticate", authChallenge)
	}
	c.Abort()
	writeJSON(c, status, body)
}
