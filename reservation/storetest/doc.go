// Package storetest is the one test suite that every reservation.Store runs,
// so that the in-memory store and the Postgres store are proven to answer
// alike: same results, same errors, same all-or-nothing writes.
//
// A store's test hands Run a function that returns a store to test:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) reservation.Store { return memory.New() })
//	}
//
// The function may return a fresh store each time or the same one: every
// subtest works on screenings with ids of its own, and never assumes that
// the store is empty.
//
// The suite checks the write guard twice. First one write at a time: taken
// seats, fencing tokens, blind writes. Then under concurrency, with no lock
// in front of the store: fifty bookings of one seat must give it to exactly
// one, and bookings of overlapping seat sets must neither half-book nor
// deadlock. That is the claim "guard=fence alone prevents double booking";
// the lock strategies are there to make the losers fail early and cheaply,
// not to keep the seats correct.
package storetest
