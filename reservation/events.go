package reservation

import (
	"context"
	"slices"
	"time"
)

// EventKind says what happened to a booking.
type EventKind string

// The kinds of Event.
const (
	EventBooked    EventKind = "booked"
	EventCancelled EventKind = "cancelled"
)

// Event tells that seats changed hands: a booking was written (EventBooked)
// or cancelled (EventCancelled). It carries what a seat map needs to redraw
// those seats, and nothing secret: no token, no customer.
type Event struct {
	Kind        EventKind
	ScreeningID string
	BookingID   string
	Seats       []string // sorted
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
