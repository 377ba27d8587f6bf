package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// queueConfigJSON is a screening's waiting room, in a screening and in
// its create body.
type queueConfigJSON struct {
	AdmitPerSecond int    `json:"admit_per_s"`
	AdmittedForMS  *int64 `json:"admitted_for_ms,omitempty"`
}

// queueEntryJSON is a queue entry. ScreeningID and Token are set only in
// the 201 answer that creates it; the token is the secret that shows the
// entry and, once admitted, lets its buyer hold and book.
type queueEntryJSON struct {
	ID            string     `json:"id"`
	ScreeningID   string     `json:"screening_id,omitempty"`
	Position      int        `json:"position"`
	Admitted      bool       `json:"admitted"`
	AdmittedUntil *time.Time `json:"admitted_until,omitempty"`
	ETAMS         *int64     `json:"eta_ms,omitempty"`
	Token         string     `json:"token,omitempty"`
}

func toQueueEntryJSON(e reservation.QueueEntry) queueEntryJSON {
	out := queueEntryJSON{ID: e.ID, Position: e.Position, Admitted: e.Admitted}
	if e.Admitted {
		until := e.AdmittedUntil.UTC()
		out.AdmittedUntil = &until
	} else {
		eta := e.ETA.Milliseconds()
		out.ETAMS = &eta
	}
	return out
}

// joinQueueJSON is the body of POST /v1/screenings/{id}/queue.
type joinQueueJSON struct {
	Customer string `json:"customer"`
}

// queueConfig turns the queue of a create body into the domain's, or
// answers 400 and returns false. admitted_for_ms is checked here because
// ms * time.Millisecond could overflow into a valid-looking duration.
func queueConfig(c *gin.Context, q *queueConfigJSON) (reservation.QueueConfig, bool) {
	if q == nil {
		return reservation.QueueConfig{}, true
	}
	if q.AdmitPerSecond < reservation.MinAdmitPerSecond || q.AdmitPerSecond > reservation.MaxAdmitPerSecond {
		respondCode(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf("queue.admit_per_s must be from %d to %d",
			reservation.MinAdmitPerSecond, reservation.MaxAdmitPerSecond))
		return reservation.QueueConfig{}, false
	}
	out := reservation.QueueConfig{AdmitPerSecond: q.AdmitPerSecond}
	if ms := q.AdmittedForMS; ms != nil {
		lo, hi := reservation.MinAdmittedFor.Milliseconds(), reservation.MaxAdmittedFor.Milliseconds()
		if *ms < lo || *ms > hi {
			respondCode(c, http.StatusBadRequest, codeInvalid, fmt.Sprintf("queue.admitted_for_ms must be from %d to %d", lo, hi))
			return reservation.QueueConfig{}, false
		}
		out.AdmittedFor = time.Duration(*ms) * time.Millisecond
	}
	return out, true
}

// queueToken returns the queue token a booking or a hold carries in
// "Authorization: Bearer <token>", "" for none; the service decides
// whether the screening needs one.
func queueToken(c *gin.Context) string {
	token, _ := bearerToken(c.Request)
	return token
}

// handleQueueJoin puts a buyer in the screening's waiting room: 201 with
// the entry and its token.
func handleQueueJoin(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		var body joinQueueJSON
		if !decodeJSON(c, &body) {
			return
		}
		j, err := svc.JoinQueue(c.Request.Context(), c.Param("id"), body.Customer)
		if err != nil {
			respondErr(c, err)
			return
		}
		out := toQueueEntryJSON(j.Entry)
		out.ScreeningID = j.Entry.ScreeningID
		out.Token = j.Token
		c.Header("Location", "/v1/queue/"+out.ID)
		writeJSON(c, http.StatusCreated, out)
	}
}

// handleQueueGet answers a queue entry to the holder of its token, in
// "Authorization: Bearer <token>"; asking keeps the entry in the queue.
func handleQueueGet(svc *reservation.Service) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, ok := uuidParam(c, "queue entry")
		if !ok {
			return
		}
		token, _ := bearerToken(c.Request)
		e, err := svc.QueueEntry(c.Request.Context(), id, token)
		if err != nil {
			respondErr(c, err)
			return
		}
		writeJSON(c, http.StatusOK, toQueueEntryJSON(e))
	}
}
