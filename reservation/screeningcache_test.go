package reservation_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// countingStore counts the Screening reads, and the seat checks, that
// reach the store.
type countingStore struct {
	reservation.Store
	reads  atomic.Int64
	checks atomic.Int64
}

func (s *countingStore) SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error) {
	s.checks.Add(1)
	return s.Store.SeatsInUse(ctx, screeningID, seats)
}

// newCountingService returns a service over a fresh countingStore, whose
// strategy LockRedis is a fakeLocker.
func newCountingService() (*reservation.Service, *countingStore) {
	store := &countingStore{Store: memory.New()}
	return reservation.NewService(store, reservation.Options{
		Lockers:     map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{}},
		DefaultLock: reservation.LockRedis,
	}), store
}

func (s *countingStore) Screening(ctx context.Context, id string) (reservation.Screening, error) {
	s.reads.Add(1)
	return s.Store.Screening(ctx, id)
}

// A screening never changes once created, so the service reads it from the
// store once and then serves bookings from its cache; an unknown id is
// asked again every time, because it may be created later.
func TestScreeningIsReadFromTheStoreOnce(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService()
	sc := reservation.Screening{
		ID: "cached", Movie: "Nosferatu", StartsAt: time.Date(2030, 1, 1, 20, 0, 0, 0, time.UTC),
		Rows: 2, SeatsPerRow: 3, Lock: reservation.LockRedis, Guard: reservation.GuardFence,
	}

	// Not there yet: not found, twice, and both reads reach the store.
	for range 2 {
		if _, err := svc.Screening(ctx, sc.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Fatalf("unknown screening: got %v, want ErrNotFound", err)
		}
	}
	if got := store.reads.Load(); got != 2 {
		t.Fatalf("store reads for an unknown screening = %d, want 2 (not found must not be cached)", got)
	}

	// Created behind the service's back, as another instance would.
	if err := store.CreateScreening(ctx, sc); err != nil {
		t.Fatal(err)
	}
	for _, seat := range []string{"A1", "A2", "B3"} {
		if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{seat}, Customer: "ada"}); err != nil {
			t.Fatalf("book %s: %v", seat, err)
		}
	}
	got, err := svc.Screening(ctx, sc.ID)
	if err != nil || got != sc {
		t.Fatalf("screening = %+v, %v; want %+v", got, err, sc)
	}
	if got := store.reads.Load(); got != 3 {
		t.Fatalf("store reads = %d after three bookings and a read, want 3 (one more than before)", got)
	}
}
