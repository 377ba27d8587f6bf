package reservation

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"
)

// EventKind says what happened to a booking or a hold.
type EventKind string

// The kinds of Event.
const (
	EventBooked    EventKind = "booked"
	EventCancelled EventKind = "cancelled"
	// EventEntered and EventLeft bracket a booking request's critical
	// section: from the moment it holds its seats' locks (under LockNone,
	// from the moment it starts checking them) until it has released
	// them, whatever the outcome. Two requests inside the section of one
	// seat at once are two lock holders at once, the race a lock exists to
	// prevent, made visible on the seat map. They are published in demo
	// mode only (Options.Demo).
	EventEntered EventKind = "entered"
	EventLeft    EventKind = "left"
	// EventHeld: a hold took the seats until ExpiresAt.
	EventHeld EventKind = "held"
	// EventReleased: a hold gave its seats up before its expiry. A hold
	// that expires publishes nothing (nothing runs then): a reader frees
	// the seats of an EventHeld itself at its ExpiresAt.
	EventReleased EventKind = "released"
)

// Event tells that seats changed hands: a booking was written (EventBooked)
// or cancelled (EventCancelled); or that a booking request entered or left
// the critical section of its seats (EventEntered, EventLeft). It carries
// what a seat map needs to redraw those seats, and nothing secret: no
// token, no customer.
type Event struct {
	Kind        EventKind
	ScreeningID string
	BookingID   string // of a booked or cancelled event
	HoldID      string // of a held or released event
	// Holder names one critical section, the same in its EventEntered and
	// its EventLeft; "" for the other kinds.
	Holder    string
	ExpiresAt time.Time // of a held event
	Seats     []string  // sorted
	At        time.Time
}

// EventPublisher receives the Service's events. The Service calls Publish
// after a booking is stored (before its locks are released) and after a
// cancellation is stored, with the request's context; an event is never
// published for something that was not written. In demo mode it calls it
// too when a booking request enters its critical section and when it
// leaves it (after its locks are released); those two come in pairs.
//
// Publish must return quickly and must not fail the booking: a
// publisher that talks to a network queues the event and sends it from a
// goroutine of its own. Delivery is best effort; a reader that must be
// exact reads the seat map (Service.Seats) again.
type EventPublisher interface {
	Publish(ctx context.Context, e Event)
}

// enter tells the publisher, in demo mode, that a booking request has
// entered the critical section of seats, and returns the function that
// tells it the request has left it. Call that after the locks are
// released.
func (s *Service) enter(ctx context.Context, screeningID string, seats []string) (left func()) {
	if s.opts.Events == nil || !s.opts.Demo {
		return func() {}
	}
	e := Event{Kind: EventEntered, ScreeningID: screeningID, Holder: uuid.NewString(), Seats: slices.Clone(seats), At: s.opts.Now().UTC()}
	s.opts.Events.Publish(ctx, e)
	return func() {
		e.Kind, e.At = EventLeft, s.opts.Now().UTC()
		s.opts.Events.Publish(ctx, e)
	}
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
