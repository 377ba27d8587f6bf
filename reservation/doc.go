// Package reservation is the booking domain of seatlock: screenings, their
// seats, bookings, and the Service that books seats without ever giving one
// seat to two customers.
//
// A booking runs the classic critical section:
//
//	validate → sort the seats → lock them (in that order, all or nothing)
//	→ check they are free → pay → guarded write → release
//
// Sorting gives every booking the same lock order, so two bookings with
// overlapping seats cannot deadlock. The lock (a SeatLocker, one per
// Strategy) keeps two bookings of a seat out of the critical section at the
// same time; the guarded write (GuardFence) makes the store refuse a write
// that no longer holds, because the seat was taken or a newer lock holder
// has written it (a fencing token). Either alone can fail: a lock can be lost
// to a pause longer than its lease, and a guard alone serialises nothing.
// The workshop switches them off one at a time to show what each does.
//
// The check before paying spares a customer a charge for seats that are
// gone. A booking that pays nothing (no provider, no payment delay) skips
// it: nothing happens between check and write, and the guarded write
// refuses seats in use with the same errors, so the booking makes one
// round trip to the store instead of two.
//
// The package knows no transport or driver: stores (package memory and
// postgres), lockers (package locking) and the HTTP API (package httpapi)
// adapt to the interfaces declared here.
//
//	svc := reservation.NewService(store, reservation.Options{Lockers: lockers})
//	conf, err := svc.Book(ctx, reservation.BookRequest{
//		ScreeningID: "demo", Seats: []string{"C7", "C8"}, Customer: "alice",
//	})
//	switch {
//	case errors.Is(err, reservation.ErrSeatTaken): // someone was faster
//	case err != nil: // ...
//	}
//	_ = conf.Token // the secret that cancels the booking; shown only once
package reservation
