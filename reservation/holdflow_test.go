package reservation_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

func TestHoldConfirmRelease(t *testing.T) {
	ctx := t.Context()
	l := &fakeLocker{fence: 3}
	log := &eventLog{}
	svc, sc := newService(t, l, reservation.Options{Events: log, DefaultHoldTTL: 2 * time.Minute})
	if sc.HoldTTL != 2*time.Minute {
		t.Fatalf("screening's HoldTTL = %v, want the service's default 2m", sc.HoldTTL)
	}

	hc, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: []string{"B2", "A1"}, Customer: "ann"})
	if err != nil {
		t.Fatalf("HoldSeats: %v", err)
	}
	h := hc.Hold
	if !slices.Equal(h.Seats, []string{"A1", "B2"}) || h.Status != reservation.HoldHeld || h.ExpiresAt.Sub(h.CreatedAt) != 2*time.Minute {
		t.Errorf("hold = %+v, want seats A1 B2 held for 2m", h)
	}
	if len(l.locked) != 1 || !slices.Equal(l.locked[0], []string{"A1", "B2"}) || l.release != 1 {
		t.Errorf("locked %v, released %d times; want A1 B2 locked once and released", l.locked, l.release)
	}

	// A booking or another hold of a held seat is refused, naming it.
	_, err = svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B2", "B3"}, Customer: "bob"})
	var held *reservation.SeatsHeldError
	if !errors.As(err, &held) || !slices.Equal(held.Seats, []string{"B2"}) {
		t.Fatalf("Book of a held seat: %v, want a SeatsHeldError naming B2", err)
	}
	if _, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "bob"}); !errors.Is(err, reservation.ErrSeatHeld) {
		t.Fatalf("HoldSeats of a held seat: %v, want ErrSeatHeld", err)
	}
	_, seats, err := svc.Seats(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seats {
		wantHeld := s.ID == "A1" || s.ID == "B2"
		if (s.Status == reservation.SeatHeld) != wantHeld || (wantHeld && !s.HoldExpiresAt.Equal(h.ExpiresAt)) {
			t.Errorf("seat %s = %s until %v; held: %v", s.ID, s.Status, s.HoldExpiresAt, wantHeld)
		}
	}

	if _, err := svc.ConfirmHold(ctx, h.ID, ""); !errors.Is(err, reservation.ErrUnauthorized) {
		t.Errorf("ConfirmHold without a token: %v, want ErrUnauthorized", err)
	}
	if _, err := svc.ConfirmHold(ctx, h.ID, "wrong"); !errors.Is(err, reservation.ErrForbidden) {
		t.Errorf("ConfirmHold with a wrong token: %v, want ErrForbidden", err)
	}
	if _, err := svc.ReleaseHold(ctx, h.ID, "wrong"); !errors.Is(err, reservation.ErrForbidden) {
		t.Errorf("ReleaseHold with a wrong token: %v, want ErrForbidden", err)
	}
	c, err := svc.ConfirmHold(ctx, h.ID, hc.Token)
	if err != nil || !c.Created || !c.Hold.CreatedAt.Equal(h.CreatedAt) {
		t.Fatalf("ConfirmHold = %+v, %v; want a new booking from the hold", c, err)
	}
	if !slices.Equal(c.Booking.Seats, h.Seats) || c.Booking.Customer != "ann" || c.Token == "" || c.Token == hc.Token {
		t.Errorf("booking %+v with token %q; want the hold's seats and customer, and a token of its own", c.Booking, c.Token)
	}
	again, err := svc.ConfirmHold(ctx, h.ID, hc.Token)
	if err != nil || again.Created || again.Booking.ID != c.Booking.ID || again.Token != c.Token {
		t.Errorf("repeat ConfirmHold = %+v, %v; want the same booking and token, not created", again, err)
	}
	if _, err := svc.ReleaseHold(ctx, h.ID, hc.Token); !errors.Is(err, reservation.ErrConflict) {
		t.Errorf("ReleaseHold after confirm: %v, want ErrConflict", err)
	}
	// The booking's token cancels it.
	if err := svc.Cancel(ctx, c.Booking.ID, c.Token); err != nil {
		t.Errorf("Cancel with the confirm's token: %v", err)
	}

	var kinds []reservation.EventKind
	for _, e := range log.all() {
		kinds = append(kinds, e.Kind)
	}
	want := []reservation.EventKind{reservation.EventHeld, reservation.EventBooked, reservation.EventCancelled}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
	if e := log.all()[0]; e.HoldID != h.ID || !e.ExpiresAt.Equal(h.ExpiresAt) || !slices.Equal(e.Seats, h.Seats) {
		t.Errorf("held event %+v, want hold %s until %v", e, h.ID, h.ExpiresAt)
	}
}

func TestHoldReleaseAndExpiry(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Date(2030, 3, 4, 19, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	log := &eventLog{}
	svc := reservation.NewService(memory.NewWithClock(clock), reservation.Options{Demo: true, DefaultLock: reservation.LockNone, Events: log})
	ttl := 90 * time.Second
	sc, err := svc.CreateScreening(ctx, reservation.NewScreening{Movie: "M", Rows: 2, SeatsPerRow: 4, HoldTTL: &ttl})
	if err != nil {
		t.Fatal(err)
	}
	hold := func() reservation.HoldConfirmation {
		t.Helper()
		hc, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "c"})
		if err != nil {
			t.Fatal(err)
		}
		return hc
	}

	first := hold()
	if released, err := svc.ReleaseHold(ctx, first.Hold.ID, first.Token); err != nil || !released {
		t.Fatalf("ReleaseHold = %v, %v; want released", released, err)
	}
	if released, err := svc.ReleaseHold(ctx, first.Hold.ID, first.Token); err != nil || released {
		t.Fatalf("second ReleaseHold = %v, %v; want nothing released, no error", released, err)
	}
	if _, err := svc.ConfirmHold(ctx, first.Hold.ID, first.Token); !errors.Is(err, reservation.ErrConflict) {
		t.Errorf("ConfirmHold after release: %v, want ErrConflict", err)
	}

	second := hold()
	mu.Lock()
	now = now.Add(ttl)
	mu.Unlock()
	if _, err := svc.ConfirmHold(ctx, second.Hold.ID, second.Token); !errors.Is(err, reservation.ErrHoldExpired) {
		t.Errorf("ConfirmHold at expiry: %v, want ErrHoldExpired", err)
	}
	if got, err := svc.Hold(ctx, second.Hold.ID); err != nil || got.Status != reservation.HoldExpired {
		t.Errorf("Hold at expiry = %+v, %v; want expired", got, err)
	}
	if released, err := svc.ReleaseHold(ctx, second.Hold.ID, second.Token); err != nil || released {
		t.Errorf("ReleaseHold of an expired hold = %v, %v; want nothing released, no error", released, err)
	}
	hold() // A1 is free again

	var kinds []reservation.EventKind
	for _, e := range log.all() {
		kinds = append(kinds, e.Kind)
	}
	// One released: the second release and the expiry free nothing.
	want := []reservation.EventKind{reservation.EventHeld, reservation.EventReleased, reservation.EventHeld, reservation.EventHeld}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v", kinds, want)
	}
}

func TestScreeningHoldTTLBounds(t *testing.T) {
	svc := reservation.NewService(memory.New(), reservation.Options{Demo: true, DefaultLock: reservation.LockNone})
	for _, ttl := range []time.Duration{0, 999 * time.Millisecond, time.Hour + time.Millisecond} {
		if _, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, HoldTTL: &ttl}); !errors.Is(err, reservation.ErrInvalid) {
			t.Errorf("hold TTL %v: %v, want ErrInvalid", ttl, err)
		}
	}
	for _, ttl := range []time.Duration{time.Second, time.Hour} {
		if _, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, HoldTTL: &ttl}); err != nil {
			t.Errorf("hold TTL %v: %v", ttl, err)
		}
	}
}
