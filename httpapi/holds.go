package httpapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/reservation"
)

// holdJSON is a Hold. Token is set only in the 201 answer that creates the
// hold: it is the secret that confirms or releases it.
type holdJSON struct {
	ID          string    `json:"id"`
	ScreeningID string    `json:"screening_id"`
	Seats       []string  `json:"seats"`
	Customer    string    `json:"customer"`
	Status      string    `json:"status"`
	ExpiresAt   time.Time `json:"expires_at"`
	BookingID   string    `json:"booking_id,omitempty"`
	Token       string    `json:"token,omitempty"`
}

func toHoldJSON(h reservation.Hold) holdJSON {
	seats := h.Seats
	if seats == nil {
		seats = []string{}
	}
	return holdJSON{
		ID:          h.ID,
		ScreeningID: h.ScreeningID,
		Seats:       seats,
		Customer:    h.Customer,
		Status:      string(h.Status),
		ExpiresAt:   h.ExpiresAt.UTC(),
		BookingID:   h.BookingID,
	}
}

// handleHoldCreate holds seats: 201 with the hold and its token.
func handleHoldCreate(svc *reservation.Service, m *metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		var body createBookingJSON
		if !decodeJSON(c, &body) || !upperCaseRows(c, body.Seats) {
			return
		}
		hc, err := svc.HoldSeats(c.Request.Context(), reservation.HoldRequest{
			ScreeningID: c.Param("id"),
			Seats:       body.Seats,
			Count:       body.Count,
			Adjacent:    body.Adjacent,
			Customer:    body.Customer,
			QueueToken:  queueToken(c),
		})
		if err != nil {
			respondErr(c, err)
			return
		}
		m.holds.WithLabelValues("held").Inc()
		out := toHoldJSON(hc.Hold)
		out.Token = hc.Token
		c.Header("Location", "/v1/holds/"+out.ID)
		writeJSON(c, http.StatusCreated, out)
	}
}

// holdID returns the hold id of the path, canonical uuids only (see
// bookingID).
func holdID(c *gin.Context) (string, bool) { return uuidParam(c, "hold") }

// handleHoldGet answers a hold, without its token.
func handleHoldGet(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := holdID(c)
		if !ok {
			return
		}
		h, err := svc.Hold(c.Request.Context(), id)
		if err != nil {
			respondErr(c, err)
			return
		}
		writeJSON(c, http.StatusOK, toHoldJSON(h))
	}
}

// handleHoldConfirm turns a hold into a booking with the hold's token in
// "Authorization: Bearer <token>": 201 with the booking and its token, or
// 200 with the same again when the hold was confirmed before, so that a
// client may retry a confirm whose answer it lost.
func handleHoldConfirm(svc *reservation.Service, m *metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := holdID(c)
		if !ok {
			return
		}
		token, _ := bearerToken(c.Request)
		conf, err := svc.ConfirmHold(c.Request.Context(), id, token)
		if errors.Is(err, reservation.ErrHoldExpired) {
			m.holds.WithLabelValues("expired").Inc()
		}
		if err != nil {
			respondErr(c, err)
			return
		}
		out := toBookingJSON(conf.Booking)
		out.Token = conf.Token
		c.Header("Location", "/v1/bookings/"+out.ID)
		status := http.StatusOK
		if conf.Created {
			status = http.StatusCreated
			m.holds.WithLabelValues("confirmed").Inc()
			m.confirmDelay.Observe(conf.Booking.CreatedAt.Sub(conf.Hold.CreatedAt).Seconds())
		}
		writeJSON(c, status, out)
	}
}

// handleHoldRelease releases a hold with its token in the Authorization
// header: 204, its seats free again.
func handleHoldRelease(svc *reservation.Service, m *metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := holdID(c)
		if !ok {
			return
		}
		token, _ := bearerToken(c.Request)
		released, err := svc.ReleaseHold(c.Request.Context(), id, token)
		if err != nil {
			respondErr(c, err)
			return
		}
		if released {
			m.holds.WithLabelValues("released").Inc()
		}
		c.Status(http.StatusNoContent)
	}
}

// holdMetrics count the holds of this instance by what became of them,
// and how long customers took from hold to confirm.
type holdMetrics struct {
	holds        *prometheus.CounterVec // outcome
	confirmDelay prometheus.Histogram
}

func newHoldMetrics(reg *prometheus.Registry) holdMetrics {
	m := holdMetrics{
		holds: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatlock_holds_total",
			Help: `Holds by outcome: "held" (made), "confirmed", "released" (before expiry), "expired" (found expired by a confirm; a hold nobody comes back to expires unseen).`,
		}, []string{"outcome"})),
		confirmDelay: register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seatlock_hold_confirm_delay_seconds",
			Help:    "Time from a hold to the confirm that turned it into a booking: how long customers take to pay.",
			Buckets: prometheus.ExponentialBuckets(0.25, 2, 15), // 250ms to ~68min
		})),
	}
	// Every outcome is a series from the start, so that rate() sees its
	// first increase.
	for _, o := range []string{"held", "confirmed", "released", "expired"} {
		m.holds.WithLabelValues(o)
	}
	return m
}
