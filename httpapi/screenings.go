package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// handleScreeningList answers one page of screenings, oldest first:
// ?limit= bounds the page (1 to 1000, default 100) and ?after= takes the
// "next" cursor of the page before. The cursor is opaque to clients, so
// that its form may change.
func handleScreeningList(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		limit := reservation.DefaultScreeningPage
		if v, ok := c.GetQuery("limit"); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > reservation.MaxScreeningPage {
				respondCode(c, http.StatusBadRequest, codeInvalid,
					fmt.Sprintf("limit must be an integer from 1 to %d", reservation.MaxScreeningPage))
				return
			}
			limit = n
		}
		after, ok := decodeCursor(c.Query("after"))
		if !ok {
			respondCode(c, http.StatusBadRequest, codeInvalid, "after must be the next cursor of an earlier page")
			return
		}
		list, next, err := svc.Screenings(c.Request.Context(), after, limit)
		if err != nil {
			respondErr(c, err)
			return
		}
		out := screeningPageJSON{Screenings: make([]screeningJSON, len(list))}
		for i, s := range list {
			out.Screenings[i] = toScreeningJSON(s)
		}
		if next != "" {
			cursor := base64.RawURLEncoding.EncodeToString([]byte(next))
			out.Next = &cursor
		}
		writeJSON(c, http.StatusOK, out)
	}
}

// decodeCursor returns the screening id in a cursor of a page; "" for no
// cursor.
func decodeCursor(cursor string) (string, bool) {
	id, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || (cursor != "" && len(id) == 0) {
		return "", false
	}
	return string(id), true
}

// handleScreeningCreate creates a screening. The service validates it; the
// handler only turns JSON into a request, checking what the JSON decoder
// cannot: the time format and a payment delay that would overflow.
func handleScreeningCreate(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		var body createScreeningJSON
		if !decodeJSON(c, &body) {
			return
		}
		req := reservation.NewScreening{
			ID:          body.ID,
			Movie:       body.Movie,
			Rows:        body.Rows,
			SeatsPerRow: body.SeatsPerRow,
			Lock:        reservation.Strategy(body.Lock),
			Guard:       reservation.Guard(body.Guard),
		}
		if body.StartsAt != "" {
			t, err := time.Parse(time.RFC3339, body.StartsAt)
			if err != nil {
				respondCode(c, http.StatusBadRequest, codeInvalid, `starts_at must be an RFC 3339 time, like "2026-05-01T20:00:00Z"`)
				return
			}
			req.StartsAt = t
		}
		if ms := body.PaymentDelayMS; ms != nil {
			// Checked here because ms * time.Millisecond could overflow
			// into a valid-looking duration.
			if max := reservation.MaxPaymentDelay.Milliseconds(); *ms < 0 || *ms > max {
				respondCode(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf("payment_delay_ms must be from 0 to %d", max))
				return
			}
			d := time.Duration(*ms) * time.Millisecond
			req.PaymentDelay = &d
		}
		if ms := body.HoldTTLMS; ms != nil {
			// Checked here for the same reason as payment_delay_ms.
			lo, hi := reservation.MinHoldTTL.Milliseconds(), reservation.MaxHoldTTL.Milliseconds()
			if *ms < lo || *ms > hi {
				respondCode(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf("hold_ttl_ms must be from %d to %d", lo, hi))
				return
			}
			d := time.Duration(*ms) * time.Millisecond
			req.HoldTTL = &d
		}
		queue, ok := queueConfig(c, body.Queue)
		if !ok {
			return
		}
		req.Queue = queue
		s, err := svc.CreateScreening(c.Request.Context(), req)
		if err != nil {
			respondErr(c, err)
			return
		}
		c.Header("Location", "/v1/screenings/"+s.ID)
		writeJSON(c, http.StatusCreated, toScreeningJSON(s))
	}
}

// handleScreeningGet answers one screening.
func handleScreeningGet(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, ok := screeningOf(c, svc)
		if !ok {
			return
		}
		writeJSON(c, http.StatusOK, toScreeningJSON(s))
	}
}

// screeningOf returns the screening the path's id names, or answers the
// service's error (404 for an unknown id) and returns false.
func screeningOf(c *gin.Context, svc *reservation.Service) (reservation.Screening, bool) {
	sc, err := svc.Screening(c.Request.Context(), c.Param("id"))
	if err != nil {
		respondErr(c, err)
		return reservation.Screening{}, false
	}
	return sc, true
}

// handleSeatMap answers a screening's seats, row by row.
func handleSeatMap(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, seats, err := svc.Seats(c.Request.Context(), c.Param("id"))
		if err != nil {
			respondErr(c, err)
			return
		}
		out := seatMapJSON{ScreeningID: s.ID, Seats: toSeatsJSON(seats)}
		writeJSON(c, http.StatusOK, out)
	}
}
