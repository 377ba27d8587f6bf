package reservation_test

import (
	"errors"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// TestScreeningLimitClearsAsScreeningsPlay fills MaxScreenings and lets
// the clock run: a screening leaves the bound once it has played and was
// created PlayedAfter ago, so creation works again by itself; one dated
// in the past counts all the same while it is new, and one too far ahead
// is refused, so that nothing holds its place for good.
func TestScreeningLimitClearsAsScreeningsPlay(t *testing.T) {
	clock := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	serviceWith := func(limit int) *reservation.Service {
		return reservation.NewService(memory.NewWithClock(now), reservation.Options{
			Lockers:     map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{}},
			DefaultLock: reservation.LockRedis, MaxScreenings: limit, Now: now,
		})
	}
	create := func(svc *reservation.Service, startsAt time.Time) error {
		_, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "M", StartsAt: startsAt, Rows: 1, SeatsPerRow: 1})
		return err
	}

	t.Run("a screening that has played leaves the bound", func(t *testing.T) {
		svc := serviceWith(2)
		for _, startsAt := range []time.Time{clock, clock.AddDate(0, 10, 0)} {
			if err := create(svc, startsAt); err != nil {
				t.Fatal(err)
			}
		}
		if err := create(svc, clock); !errors.Is(err, reservation.ErrLimit) {
			t.Fatalf("a third screening over a bound of 2: %v, want ErrLimit", err)
		}
		clock = clock.Add(reservation.PlayedAfter + time.Minute)
		if err := create(svc, clock); err != nil {
			t.Fatalf("after the first screening played: %v, want it created", err)
		}
		if err := create(svc, clock); !errors.Is(err, reservation.ErrLimit) {
			t.Errorf("over the bound again: %v, want ErrLimit (one upcoming, one new)", err)
		}
	})
	t.Run("a new screening dated in the past counts", func(t *testing.T) {
		svc := serviceWith(1)
		if err := create(svc, clock.AddDate(-1, 0, 0)); err != nil {
			t.Fatal(err)
		}
		if err := create(svc, clock.AddDate(-1, 0, 0)); !errors.Is(err, reservation.ErrLimit) {
			t.Errorf("a second over a bound of 1: %v, want ErrLimit", err)
		}
	})
	t.Run("a screening too far ahead is refused", func(t *testing.T) {
		svc := serviceWith(1)
		if err := create(svc, clock.Add(reservation.MaxStartsAhead+time.Hour)); !errors.Is(err, reservation.ErrInvalid) {
			t.Errorf("a screening %v ahead: %v, want ErrInvalid", reservation.MaxStartsAhead+time.Hour, err)
		}
	})
}
