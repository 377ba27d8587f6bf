package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// TestHoldExpiresOnTheStoresClock moves the store's clock across a hold's
// expiry: live one microsecond before, gone at the instant itself.
func TestHoldExpiresOnTheStoresClock(t *testing.T) {
	clk := testenv.NewClock(time.Date(2030, 1, 2, 20, 0, 0, 0, time.UTC))
	store := memory.NewWithClock(clk.Now)
	ctx := t.Context()
	sc := reservation.Screening{ID: "clocked", Movie: "M", Rows: 1, SeatsPerRow: 4, Lock: reservation.LockNone, Guard: reservation.GuardFence}
	if err := store.CreateScreening(ctx, sc); err != nil {
		t.Fatal(err)
	}
	h, err := store.CreateHold(ctx, reservation.HoldWrite{
		Hold: reservation.Hold{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "c"},
		TTL:  time.Minute, TokenHash: []byte("h"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(time.Minute); !h.ExpiresAt.Equal(want) {
		t.Fatalf("ExpiresAt = %v, want the store's now + TTL, %v", h.ExpiresAt, want)
	}
	booking := func() reservation.Write {
		return reservation.Write{
			Booking:   reservation.Booking{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "c"},
			TokenHash: []byte("b"), Guard: reservation.GuardFence,
		}
	}

	clk.Advance(time.Minute - time.Microsecond)
	if _, held, _ := store.SeatsInUse(ctx, sc.ID, []string{"A1"}); len(held) != 1 {
		t.Fatalf("a microsecond before expiry, SeatsInUse says held %v, want [A1]", held)
	}
	if err := store.Book(ctx, booking()); !errors.Is(err, reservation.ErrSeatHeld) {
		t.Fatalf("Book a microsecond before expiry: %v, want ErrSeatHeld", err)
	}

	clk.Advance(time.Microsecond)
	got, _, err := store.Hold(ctx, h.ID)
	if err != nil || got.Status != reservation.HoldExpired {
		t.Fatalf("at expiry, Hold = %+v, %v; want expired", got, err)
	}
	if err := store.ConfirmHold(ctx, h.ID, booking()); !errors.Is(err, reservation.ErrHoldExpired) {
		t.Fatalf("ConfirmHold at expiry: %v, want ErrHoldExpired", err)
	}
	if err := store.Book(ctx, booking()); err != nil {
		t.Fatalf("Book at expiry: %v, want the seat free", err)
	}
}
