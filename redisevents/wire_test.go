package redisevents

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

// timeMessage is message as it was with time.Time fields: what instances
// of before write and read.
type timeMessage struct {
	Kind        reservation.EventKind `json:"kind"`
	ScreeningID string                `json:"screening_id"`
	BookingID   string                `json:"booking_id"`
	HoldID      string                `json:"hold_id,omitempty"`
	Holder      string                `json:"holder,omitempty"`
	ExpiresAt   time.Time             `json:"expires_at,omitzero"`
	Seats       []string              `json:"seats"`
	At          time.Time             `json:"at"`
}

// TestMessageOnTheWireUnchanged checks that a message is written byte for
// byte as with time.Time fields, and read back to the same event, so that
// instances of before and after read each other.
func TestMessageOnTheWireUnchanged(t *testing.T) {
	at := time.Date(2026, 11, 27, 4, 30, 1, 123456789, time.UTC)
	for _, ev := range []reservation.Event{
		{Kind: reservation.EventBooked, ScreeningID: "s1", BookingID: "b1", Seats: []string{"A1", "A2"}, At: at},
		{Kind: reservation.EventHeld, ScreeningID: "s1", HoldID: "h1", ExpiresAt: at.Add(time.Minute), Seats: []string{"B3"}, At: at},
		{Kind: reservation.EventEntered, ScreeningID: "s1", Holder: "x", Seats: []string{"C1"}, At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
	} {
		got, err := json.Marshal(toMessage(ev))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(timeMessage(ev))
		if string(got) != string(want) {
			t.Errorf("written as\n%s\nwant\n%s", got, want)
		}
		var back message
		if err := json.Unmarshal(want, &back); err != nil || !reflect.DeepEqual(back.event(), ev) {
			t.Errorf("read back as %+v (%v), want %+v", back.event(), err, ev)
		}
	}
}
