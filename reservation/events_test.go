package reservation_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/seatlock/seatlock/reservation"
)

// eventLog is an EventPublisher that remembers what it was told.
type eventLog struct {
	mu     sync.Mutex
	events []reservation.Event
}

func (l *eventLog) Publish(_ context.Context, e reservation.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []reservation.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	log := &eventLog{}
	svc, sc := newService(t, &fakeLocker{}, reservation.Options{Events: log})

	conf, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B2", "A1"}, Customer: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	// Refused bookings, replays and wrong tokens publish nothing.
	_, err = svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "bob"})
	if !errors.Is(err, reservation.ErrSeatTaken) {
		t.Fatalf("second booking of A1: %v", err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, "wrong"); !errors.Is(err, reservation.ErrForbidden) {
		t.Fatalf("cancel with a wrong token: %v", err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, conf.Token); err != nil {
		t.Fatal(err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, conf.Token); err != nil {
		t.Fatalf("second cancel: %v", err)
	}

	got := log.all()
	if len(got) != 2 {
		t.Fatalf("%d events, want booked and cancelled: %+v", len(got), got)
	}
	for i, kind := range []reservation.EventKind{reservation.EventBooked, reservation.EventCancelled} {
		e := got[i]
		if e.Kind != kind || e.ScreeningID != sc.ID || e.BookingID != conf.Booking.ID ||
			!slices.Equal(e.Seats, []string{"A1", "B2"}) || e.At.IsZero() {
			t.Errorf("event %d = %+v, want %s of booking %s, seats A1 B2", i, e, kind, conf.Booking.ID)
		}
	}
}
