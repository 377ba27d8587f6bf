package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// Two customers ask for the same seat: the first booking holds the seat's
// lock while it checks and writes, so the second finds the seat taken and
// gets a conflict instead of a double booking.
func ExampleService_Book() {
	ctx := context.Background()
	svc := reservation.NewService(memory.New(), reservation.Options{
		Lockers:     map[reservation.Strategy]reservation.SeatLocker{reservation.LockGlobal: locking.Global()},
		DefaultLock: reservation.LockGlobal,
	})
	noDelay := time.Duration(0)
	sc, err := svc.CreateScreening(ctx, reservation.NewScreening{
		Movie: "Metropolis", Rows: 2, SeatsPerRow: 4, PaymentDelay: &noDelay,
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, customer := range []string{"alice", "bob"} {
		c, err := svc.Book(ctx, reservation.BookRequest{
			ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: customer,
		})
		switch {
		case errors.Is(err, reservation.ErrSeatTaken):
			fmt.Printf("%s: conflict: %v\n", customer, err)
		case err != nil:
			fmt.Printf("%s: %v\n", customer, err)
		default:
			fmt.Printf("%s: booked %v\n", customer, c.Booking.Seats)
		}
	}
	// Output:
	// alice: booked [A1]
	// bob: conflict: seats already booked: A1
}
