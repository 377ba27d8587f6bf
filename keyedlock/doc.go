// Package keyedlock provides a keyed mutex: one lock per key, for keys that
// are not known in advance, such as the seats of a screening.
//
// A booking for seat C7 must exclude every other booking for C7, and must
// not wait for a booking of C8. One global sync.Mutex gets the first half
// right and the second wrong; a fixed array of mutexes picked by hashing
// the key ("striped" locks) lets two seats share a mutex and wait for each
// other. A Mutex creates a lock for a key when the key is first locked, and
// removes it when the last goroutine holding or waiting for it leaves:
//
//	var seats keyedlock.Mutex // the zero value is ready to use
//
//	err := seats.Do(ctx, "screening-42/C7", func() error {
//		// Only one goroutine at a time runs here for this seat;
//		// other seats are not held up.
//		return book(ctx, "C7")
//	})
//
// # The classic bug this package avoids
//
// The obvious keyed mutex is a map from key to *sync.Mutex that deletes the
// map entry on Unlock to avoid leaking memory. It lets two goroutines hold
// one key: while A holds the key, B fetches the same *sync.Mutex from the map
// and blocks on it; A unlocks and deletes the entry; B now holds the old
// mutex, and C, finding no entry, creates a new mutex and holds that. The
// subpackage naive keeps that implementation, and a test that shows it
// failing, for the workshop.
//
// A Mutex instead counts references: an entry stays in its map while it
// has a holder or a waiter, and only the last one to leave deletes it. The
// count is not a number but the entry itself, which exists exactly while
// the key has a holder or a waiter, and carries the queue of waiters.
//
// # Fairness: no waiter starves
//
// Waiters for a key queue in arrival order, and Unlock wakes the oldest of
// them. Unlock does not hand the key over, though: it frees the key, and
// the woken waiter takes it when it runs, unless a goroutine that locks
// the key in that instant, often the one that has just unlocked it, gets
// there first ("barging"). The waiter that lost keeps its place at the
// front of the queue. This is what sync.Mutex does, and for the same
// reason: waking a goroutine takes microseconds, and a key that changed
// hands on every Unlock would cost that switch on every operation, while
// the goroutine already running can take the key back at once.
//
// Barging alone could keep one waiter waiting for ever behind a stream of
// goroutines that each lock the key the moment it is freed. So a waiter
// that loses the race after waiting longer than a millisecond is marked
// starving, and the next Unlock hands the key straight to it: from then on
// it is the holder, and nobody can take the key in between. With holds
// longer than that, like a seat held during a payment, a waiter is
// overtaken at most once; only short holds are barged in on often.
//
// # Contexts
//
// Lock waits at most as long as its context allows. A waiter whose context
// ends leaves the queue and holds nothing. The tricky moment is when Unlock
// hands the key to a waiter at the very instant that waiter's context ends:
// the waiter then owns the key without knowing it. Lock checks for that and
// passes the key on to the next waiter, exactly as Unlock would, before it
// returns the context's error. Dropping it instead would leave the key
// locked by nobody, for ever. Likewise a waiter woken to take a free key
// whose context ends passes the wake-up to the next waiter.
//
// # Several keys
//
// A booking of seats C7 and C8 needs both. If one goroutine takes C7 then
// C8 while another takes C8 then C7, each can end up holding one and
// waiting for the other: a deadlock. LockAll takes keys in one canonical
// (sorted) order, whatever order they were given in, so overlapping sets
// of keys never deadlock, and takes all of them or none.
//
// # Cost
//
// Locking and unlocking a key nobody else wants allocates nothing: the map
// stores each key's state and queue by value, and waiter records are
// recycled through a sync.Pool. All keys share one short internal mutex
// that guards the map; it is never held while a key is held or waited for.
// Like any Go map, the internal map does not shrink, so its memory follows
// the largest number of keys ever locked at the same time, not the number
// of keys ever used.
package keyedlock
