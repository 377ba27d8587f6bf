// Package memory is a reservation.Store that keeps everything in the
// process's memory: the embedded default of the API when no DATABASE_URL is
// given, and the fast store of the domain's tests.
//
// It shows the guarded write in its plainest form. Book checks every seat
// (free? fencing token newer than the seat's last one?) and then writes them
// all, under one mutex. Because the check and the write happen under the same
// lock, no other Book can slip in between them: the check still holds when
// the write is made. That is the whole job of a write guard, and the
// Postgres store does the same with a conditional upsert inside a
// transaction.
//
// The mutex serialises only the store's own short critical sections; it is
// not the seat lock of a booking. A booking that checks the seats with
// SeatsInUse, waits for its payment and then calls Book may find that the
// seats were taken in between: the guard catches that, the lock of the
// booking's strategy is what keeps it from happening in the first place.
//
// Everything that goes in or comes out is copied, so a caller cannot change
// the store's state by keeping a slice it passed or got.
//
//	store := memory.New()
//	svc := reservation.NewService(store, reservation.Options{})
package memory
