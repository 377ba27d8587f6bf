package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// handleScreeningList answers every screening, oldest first.
func handleScreeningList(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		list, err := svc.Screenings(c.Request.Context())
		if err != nil {
			respondErr(c, err)
			return
		}
		out := make([]screeningJSON, len(list))
		for i, s := range list {
			out[i] = toScreeningJSON(s)
		}
		c.JSON(http.StatusOK, gin.H{"screenings": out})
	}
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
		s, err := svc.CreateScreening(c.Request.Context(), req)
		if err != nil {
			respondErr(c, err)
			return
		}
		c.Header("Location", "/v1/screenings/"+s.ID)
		c.JSON(http.StatusCreated, toScreeningJSON(s))
	}
}

// handleScreeningGet answers one screening.
func handleScreeningGet(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, err := svc.Screening(c.Request.Context(), c.Param("id"))
		if err != nil {
			respondErr(c, err)
			return
		}
		c.JSON(http.StatusOK, toScreeningJSON(s))
	}
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
		c.JSON(http.StatusOK, out)
	}
}
