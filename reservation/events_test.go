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
// bookings, replays and wrong tokens publish nothing of the kind. In demo
// mode, every booking request that gets its locks, booked or refused,
// enters and leaves the critical section of its seats once, and a booking
// is published inside it; a request refused before the locks publishes
// neither. Outside demo mode, critical sections are not published.
func TestEvents(t *testing.T) {
	for _, demo := range []bool{true, false} {
		t.Run(map[bool]string{true: "demo mode", false: "outside demo mode"}[demo], func(t *testing.T) {
			ctx := context.Background()
			log := &eventLog{}
			svc, sc := newService(t, &fakeLocker{}, reservation.Options{Events: log, Demo: demo})

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

			// The events expected: holder "ann" and "bob" stand for the
			// holder ids of the two requests that got their locks.
			both := []string{"A1", "B2"}
			type event struct {
				kind            reservation.EventKind
				booking, holder string
				seats           []string
			}
			want := []event{
				{reservation.EventEntered, "", "ann", both},
				{reservation.EventBooked, conf.Booking.ID, "", both},
				{reservation.EventLeft, "", "ann", both},
				{reservation.EventEntered, "", "bob", []string{"A1"}}, // refused: A1 is taken
				{reservation.EventLeft, "", "bob", []string{"A1"}},
				{reservation.EventCancelled, conf.Booking.ID, "", both},
			}
			if !demo {
				want = slices.DeleteFunc(want, func(e event) bool { return e.holder != "" })
			}
			if len(got) != len(want) {
				t.Fatalf("%d events %+v, want %d", len(got), got, len(want))
			}
			ids := map[string]string{} // "ann", "bob" -> the holder id first seen for them
			for i, w := range want {
				e := got[i]
				holder := ""
				if w.holder != "" {
					if _, seen := ids[w.holder]; !seen {
						ids[w.holder] = e.Holder
					}
					if holder = ids[w.holder]; holder == "" {
						t.Errorf("event %d = %+v has no holder", i, e)
					}
				}
				if e.Kind != w.kind || e.BookingID != w.booking || e.Holder != holder || e.ScreeningID != sc.ID ||
					!slices.Equal(e.Seats, w.seats) || e.At.IsZero() {
					t.Errorf("event %d = %+v, want %s, booking %q, holder %s, seats %v", i, e, w.kind, w.booking, w.holder, w.seats)
				}
			}
			if demo && ids["ann"] == ids["bob"] {
				t.Errorf("ann's and bob's critical sections share the holder %q", ids["ann"])
			}
		})
	}
}
