package reservation_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// TestPostgresXactNeedsATxBooker: the memory store cannot hold a lock in a
// transaction, so a service over it does not offer postgres-xact, and a
// screening that asks for it is refused with the list of what is offered.
func TestPostgresXactNeedsATxBooker(t *testing.T) {
	svc := reservation.NewService(memory.New(), reservation.Options{
		Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{}},
	})
	if slices.Contains(svc.Strategies(), string(reservation.LockPostgresXact)) {
		t.Errorf("Strategies() = %v offers postgres-xact over the memory store", svc.Strategies())
	}
	_, err := svc.CreateScreening(t.Context(), reservation.NewScreening{
		Movie: "M", Rows: 1, SeatsPerRow: 1, Lock: reservation.LockPostgresXact})
	if !errors.Is(err, reservation.ErrInvalid) {
		t.Fatalf("CreateScreening: %v, want ErrInvalid", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "postgres-xact") || !strings.Contains(msg, "offered: redis") {
		t.Errorf("message %q should name the strategy and what is offered", msg)
	}
}
