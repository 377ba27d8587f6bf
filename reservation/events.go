package reservation

import (
	"context"
	"slices"
	"time"
)

// EventKind says what happened to a booking or a hold.
type EventKind string

// The kinds of Event.
const (
	EventBooked    EventKind = "booked"
	EventCancelled EventKind = "cancelled"
	// EventHeld: a hold took the seats until ExpiresAt.
	EventHeld EventKind = "held"
	// EventReleased: a hold gave its seats up before its expiry. A hold
	// that expires publishes nothing (nothing runs then): a reader frees
	// the seats of an EventHeld itself at its ExpiresAt.
	EventReleased EventKind = "released"
)

// Event tells that seats changed hands: a booking was written (EventBooked)
// or cancelled (EventCancelled). It carries what a seat map needs to redraw
// those seats, and nothing secret: no token, no customer.
type Event struct {
	Kind        EventKind
	ScreeningID string
	BookingID   string    // of a booked or cancelled event
	HoldID      string    // of a held or released event
	ExpiresAt   time.Time // of a held event
	Seats       []string  // sorted
	At          time.Time
}

// EventPublisher receives the Service's events. The Service calls Publish
// after a booking is stored (before its locks are released) and after a
// cancellation is stored, with the request's context; an event is never
// published for something that was not written.
//
// Publish must return quickly and must not fail the booking: a
// publisher that talks to a network queues the event and sends it from a
// goroutine of its own. Delivery is best effort; a reader that must be
// exact reads the seat map (Service.Seats) again.
type EventPublisher interface {
	Publish(ctx context.Context, e Event)
}

// publish hands an event to the service's publisher, if it has one.
func (s *Service) publish(ctx context.Context, kind EventKind, b Booking) {
	if s.opts.Events == nil {
		return
	}
	s.opts.Events.Publish(ctx, Event{
		Kind:        kind,
		ScreeningID: b.ScreeningID,
		BookingID:   b.ID,
		Seats:       slices.Clone(b.Seats),
		At:          s.opts.Now().UTC(),
	})
}
