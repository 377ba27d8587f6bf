package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// The JSON shapes of docs/api.md and openapi.json. They are separate from the domain
// types so that the wire format is written down in one place and a change
// of the domain cannot change the API by accident.

// screeningJSON is a Screening.
type screeningJSON struct {
	ID             string    `json:"id"`
	Movie          string    `json:"movie"`
	StartsAt       time.Time `json:"starts_at"`
	Rows           int       `json:"rows"`
	SeatsPerRow    int       `json:"seats_per_row"`
	Lock           string    `json:"lock"`
	Guard          string    `json:"guard"`
	PaymentDelayMS int64     `json:"payment_delay_ms"`
	// Queue is set only for a screening with a waiting room.
	Queue *queueConfigJSON `json:"queue,omitempty"`
}

func toScreeningJSON(s reservation.Screening) screeningJSON {
	var queue *queueConfigJSON
	if s.Queue.Enabled() {
		ms := s.Queue.AdmittedFor.Milliseconds()
		queue = &queueConfigJSON{AdmitPerSecond: s.Queue.AdmitPerSecond, AdmittedForMS: &ms}
	}
	return screeningJSON{
		Queue:          queue,
		ID:             s.ID,
		Movie:          s.Movie,
		StartsAt:       s.StartsAt.UTC(),
		Rows:           s.Rows,
		SeatsPerRow:    s.SeatsPerRow,
		Lock:           string(s.Lock),
		Guard:          string(s.Guard),
		PaymentDelayMS: s.PaymentDelay.Milliseconds(),
	}
}

// screeningPageJSON is the answer of GET /v1/screenings: a page of
// screenings and the cursor of the next page, null on the last.
type screeningPageJSON struct {
	Screenings []screeningJSON `json:"screenings"`
	Next       *string         `json:"next"`
}

// createScreeningJSON is the body of POST /v1/screenings. Optional fields
// are pointers or empty strings, so that "not sent" takes the server's
// default. starts_at is a string so that a bad time gets a clear message.
type createScreeningJSON struct {
	ID             string `json:"id"`
	Movie          string `json:"movie"`
	StartsAt       string `json:"starts_at"`
	Rows           int    `json:"rows"`
	SeatsPerRow    int    `json:"seats_per_row"`
	Lock           string `json:"lock"`
	Guard          string `json:"guard"`
	PaymentDelayMS *int64 `json:"payment_delay_ms"`
	HoldTTLMS      *int64 `json:"hold_ttl_ms"`
	// Queue gives the screening a waiting room.
	Queue *queueConfigJSON `json:"queue"`
}

// seatJSON is a Seat; booking_id is left out for a free seat.
type seatJSON struct {
	ID        string `json:"id"`
	Row       string `json:"row"`
	Number    int    `json:"number"`
	Status    string `json:"status"`
	BookingID string `json:"booking_id,omitempty"`
	// Bookings is set only for a seat that more than one confirmed
	// booking claims (possible under guard=off): all of them, oldest first.
	Bookings []string `json:"bookings,omitempty"`
	// HoldExpiresAt is set only for a held seat: when its hold ends.
	HoldExpiresAt *time.Time `json:"hold_expires_at,omitempty"`
}

// seatMapJSON is the answer of GET /v1/screenings/{id}/seats.
type seatMapJSON struct {
	ScreeningID string     `json:"screening_id"`
	Seats       []seatJSON `json:"seats"`
}

// bookingJSON is a Booking. Token is set only in the 201 answer that
// creates the booking (or replays it): it is the secret that cancels it.
type bookingJSON struct {
	ID          string    `json:"id"`
	ScreeningID string    `json:"screening_id"`
	Seats       []string  `json:"seats"`
	Customer    string    `json:"customer"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	Token       string    `json:"token,omitempty"`
}

// appendJSON appends the booking's JSON, the bytes encoding/json writes
// for it (TestBookingAppendJSONIsEncodingJSON sets every field and
// compares), at a fraction of encoding/json's cost: a booking is the
// answer of every POST .../bookings, and encoding/json walks the struct by
// reflection. A field added to bookingJSON must be added here too; the
// test fails until it is.
func (b bookingJSON) appendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, b.ID)
	dst = append(dst, `,"screening_id":`...)
	dst = appendJSONString(dst, b.ScreeningID)
	dst = append(dst, `,"seats":`...)
	if b.Seats == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, seat := range b.Seats {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, seat)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"customer":`...)
	dst = appendJSONString(dst, b.Customer)
	dst = append(dst, `,"status":`...)
	dst = appendJSONString(dst, b.Status)
	dst = append(dst, `,"created_at":"`...)
	dst, err := b.CreatedAt.AppendText(dst) // MarshalJSON's text, unquoted, and its errors
	if err != nil {
		return nil, err
	}
	dst = append(dst, '"')
	if b.Token != "" {
		dst = append(dst, `,"token":`...)
		dst = appendJSONString(dst, b.Token)
	}
	return append(dst, '}'), nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it:
// a string whose bytes are all jsonVerbatim as it is, between quotes; any
// other, by encoding/json itself.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !jsonVerbatim[s[i]] {
			quoted, _ := json.Marshal(s) // a string always encodes
			return append(dst, quoted...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// jsonVerbatim holds the bytes that encoding/json writes in a string as
// they are: printable ASCII but for the quote, the backslash, and the <, >
// and & that it escapes for HTML. It is never written after it is made.
var jsonVerbatim = func() (verbatim [256]bool) {
	for c := ' '; c <= '~'; c++ {
		verbatim[c] = !strings.ContainsRune(`"\<>&`, c)
	}
	return verbatim
}()

func toBookingJSON(b reservation.Booking) bookingJSON {
	seats := b.Seats
	if seats == nil {
		seats = []string{}
	}
	return bookingJSON{
		ID:          b.ID,
		ScreeningID: b.ScreeningID,
		Seats:       seats,
		Customer:    b.Customer,
		Status:      string(b.Status),
		CreatedAt:   b.CreatedAt.UTC(),
	}
}

// createBookingJSON is the body of POST /v1/screenings/{id}/bookings and
// of POST /v1/screenings/{id}/holds: seats, or count (with adjacent) for
// the best seats available.
type createBookingJSON struct {
	Seats    []string `json:"seats"`
	Count    int      `json:"count"`
	Adjacent bool     `json:"adjacent"`
	Customer string   `json:"customer"`
}

// snapshotJSON is the first event of a live stream: the screening and all
// of its seats, and whether the server runs in demo mode, the only mode in
// which "entered" and "left" follow: a page shows its lock timeline then,
// and only then.
type snapshotJSON struct {
	Screening screeningJSON `json:"screening"`
	Seats     []seatJSON    `json:"seats"`
	Demo      bool          `json:"demo"`
	// Queue is the waiting room's figures, on a screening that has one.
	Queue *queueStatsJSON `json:"queue,omitempty"`
}

// queueStatsJSON is a waiting room as the seat map shows it: in the
// snapshot, and as the "queue" event whenever it changes.
type queueStatsJSON struct {
	ScreeningID    string `json:"screening_id"`
	Waiting        int    `json:"waiting"`
	Admitted       int    `json:"admitted"`
	AdmitPerSecond int    `json:"admit_per_s"`
}

func toQueueStatsJSON(screeningID string, st reservation.QueueStats) queueStatsJSON {
	return queueStatsJSON{ScreeningID: screeningID, Waiting: st.Waiting, Admitted: st.Admitted, AdmitPerSecond: st.AdmitPerSecond}
}

func toSnapshotJSON(sc reservation.Screening, seats []reservation.Seat, demo bool) snapshotJSON {
	return snapshotJSON{Screening: toScreeningJSON(sc), Seats: toSeatsJSON(seats), Demo: demo}
}

// eventJSON is an event of a live stream: "booked" and "cancelled" carry a
// booking id; "held" and "released" a hold id, and "held" its expires_at,
// the moment a reader frees the seats again unless a "booked" or
// "released" came first; "entered" and "left" (demo mode) a holder.
type eventJSON struct {
	Kind        string     `json:"kind"`
	ScreeningID string     `json:"screening_id"`
	BookingID   string     `json:"booking_id,omitempty"`
	HoldID      string     `json:"hold_id,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	Holder      string     `json:"holder,omitempty"`
	Seats       []string   `json:"seats"`
	At          time.Time  `json:"at"`
}

func toEventJSON(e reservation.Event) eventJSON {
	return eventJSON{
		Kind:        string(e.Kind),
		ScreeningID: e.ScreeningID,
		BookingID:   e.BookingID,
		Holder:      e.Holder,
		HoldID:      e.HoldID,
		ExpiresAt:   optionalTime(e.ExpiresAt),
		Seats:       e.Seats,
		At:          e.At.UTC(),
	}
}

// optionalTime returns nil for the zero time, so that it is left out.
func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func toSeatsJSON(seats []reservation.Seat) []seatJSON {
	out := make([]seatJSON, len(seats))
	for i, seat := range seats {
		out[i] = seatJSON{
			ID:            seat.ID,
			Row:           seat.Row,
			Number:        seat.Number,
			Status:        string(seat.Status),
			BookingID:     seat.BookingID,
			Bookings:      seat.Bookings,
			HoldExpiresAt: optionalTime(seat.HoldExpiresAt),
		}
	}
	return out
}

// writeJSON answers v as JSON that ends in a newline, as text on the wire
// should: a terminal's prompt then starts on its own line after curl, and
// line-oriented tools read one answer per line. gin's own JSON renderer
// leaves the newline out.
func writeJSON(c *gin.Context, status int, v any) {
	c.Render(status, jsonLine{v})
}

// jsonLine is a gin render.Render of one JSON value and a newline.
type jsonLine struct{ v any }

// Render writes the value with its own appendJSON when it has one (see
// bookingJSON), else with an Encoder, which writes what json.Marshal
// would and the newline in one Write, from a buffer encoding/json reuses:
// Marshal would return a copy of that buffer, and appending the newline
// would copy it again.
func (r jsonLine) Render(w http.ResponseWriter) error {
	r.WriteContentType(w)
	a, ok := r.v.(jsonAppender)
	if !ok {
		return json.NewEncoder(w).Encode(r.v)
	}
	b, err := a.appendJSON(make([]byte, 0, 320))
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// jsonAppender is a value that appends its own JSON, the bytes
// encoding/json would write for it, to dst.
type jsonAppender interface {
	appendJSON(dst []byte) ([]byte, error)
}

// WriteContentType sets the JSON content type unless one is set. The
// header map is used directly, under the canonical key, which spares
// Header.Get and Header.Set canonicalizing it on every answer.
func (jsonLine) WriteContentType(w http.ResponseWriter) {
	h := w.Header()
	if v := h["Content-Type"]; len(v) == 0 || v[0] == "" {
		h["Content-Type"] = []string{"application/json; charset=utf-8"}
	}
}
