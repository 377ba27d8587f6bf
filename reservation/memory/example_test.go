package memory_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// The guard at work: the second booking of seat C7 is refused, and the
// free seat it asked for too stays free (all or nothing).
func Example() {
	ctx := context.Background()
	store := memory.New()
	_ = store.CreateScreening(ctx, reservation.Screening{ID: "demo", Movie: "Metropolis",
		StartsAt: time.Now(), Rows: 5, SeatsPerRow: 10, Lock: reservation.LockNone, Guard: reservation.GuardFence})

	book := func(id string, seats ...string) error {
		return store.Book(ctx, reservation.Write{
			Booking:   reservation.Booking{ID: id, ScreeningID: "demo", Seats: seats, Customer: "alice"},
			TokenHash: []byte("sha-256 of the token"),
			Guard:     reservation.GuardFence,
		})
	}
	fmt.Println(book("0c5e4a3e-0000-4000-8000-000000000001", "C7"))
	err := book("0c5e4a3e-0000-4000-8000-000000000002", "C7", "C8")
	fmt.Println(err, errors.Is(err, reservation.ErrSeatTaken))
	booked, _ := store.BookedSeats(ctx, "demo")
	fmt.Println(len(booked), booked["C8"] == "")
	// Output:
	// <nil>
	// seats already booked: C7 true
	// 1 true
}
