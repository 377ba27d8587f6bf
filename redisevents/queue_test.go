package redisevents

import (
	"context"
	"log/slog"
	"testing"

	"github.com/seatlock/seatlock/reservation"
)

// Critical-section events never take a booking event's place in the
// publish queue: once it is half full they are dropped, and a booking
// event still goes in.
func TestPublishQueueKeepsRoomForBookings(t *testing.T) {
	b := &Bus{queue: make(chan reservation.Event, publishQueue), logger: slog.New(slog.DiscardHandler)}
	booked := reservation.Event{Kind: reservation.EventBooked, ScreeningID: "s1", BookingID: "b1", Seats: []string{"A1"}}
	entered := reservation.Event{Kind: reservation.EventEntered, ScreeningID: "s1", Holder: "h1", Seats: []string{"A1"}}
	for range publishQueue/2 - 1 {
		b.Publish(context.Background(), booked)
	}
	b.Publish(context.Background(), entered) // one short of half: queued
	b.Publish(context.Background(), entered) // half full: dropped
	b.Publish(context.Background(), booked)
	kinds := map[reservation.EventKind]int{}
	for len(b.queue) > 0 {
		kinds[(<-b.queue).Kind]++
	}
	if kinds[reservation.EventEntered] != 1 || kinds[reservation.EventBooked] != publishQueue/2 {
		t.Errorf("queued %v, want 1 entered and %d booked", kinds, publishQueue/2)
	}
}
