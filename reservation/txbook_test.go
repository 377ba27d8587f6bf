package reservation_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// TestPostgresXactNeedsItsLocker: a service offers postgres-xact only when
// it is given its locker (a store that can lock in a transaction, as the
// Postgres one can, makes it), and a screening that asks for it otherwise
// is refused with the list of what is offered.
func TestPostgresXactNeedsItsLocker(t *testing.T) {
	svc := reservation.NewService(memory.New(), reservation.Options{
		Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{}},
	})
	if slices.Contains(svc.Strategies(), string(reservation.LockPostgresXact)) {
		t.Errorf("Strategies() = %v offers postgres-xact without its locker", svc.Strategies())
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
