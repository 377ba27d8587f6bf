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

// A booking and its cancellation are published once each; refused
// bookings, replays and wrong tokens publish nothing of the kind. Every
// booking request that gets its locks, booked or refused, enters and
// leaves the critical section of its seats once, and a booking is
// published inside it; a request refused before the locks publishes
// neither.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	log := &eventLog{}
	svc, sc := newService(t, &fakeLocker{}, reservation.Options{Events: log})

	conf, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B2", "A1"}, Customer: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "bob"})
	if !errors.Is(err, reservation.ErrSeatTaken) {
		t.Fatalf("second booking of A1: %v", err)
	}
	if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"Z9"}, Customer: "cat"}); !errors.Is(err, reservation.ErrInvalid) {
		t.Fatalf("booking a seat that does not exist: %v", err)
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
	both := []string{"A1", "B2"}

	kinds := make([]reservation.EventKind, len(got))
	for i, e := range got {
		kinds[i] = e.Kind
	}
	want := []reservation.EventKind{
		reservation.EventEntered, reservation.EventBooked, reservation.EventLeft, // ann
		reservation.EventEntered, reservation.EventLeft, // bob, refused: A1 is taken
		reservation.EventCancelled,
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	ann, bob := got[0].Holder, got[3].Holder
	if ann == "" || bob == "" || ann == bob {
		t.Errorf("holders %q and %q, want two different ones", ann, bob)
	}
	for i, w := range []struct {
		booking, holder string
		seats           []string
	}{
		{"", ann, both}, {conf.Booking.ID, "", both}, {"", ann, both},
		{"", bob, []string{"A1"}}, {"", bob, []string{"A1"}},
		{conf.Booking.ID, "", both},
	} {
		e := got[i]
		if e.BookingID != w.booking || e.Holder != w.holder || e.ScreeningID != sc.ID || !slices.Equal(e.Seats, w.seats) || e.At.IsZero() {
			t.Errorf("event %d = %+v, want booking %q, holder %q, seats %v", i, e, w.booking, w.holder, w.seats)
		}
	}
}
