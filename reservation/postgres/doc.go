// Package postgres is a reservation.Store in PostgreSQL, through pgx and its
// connection pool. It is the store that makes several API instances one
// system: whatever their locks do, the database has the last word on who
// holds a seat.
//
// # The conditional upsert is the guard
//
// A booking checks that its seats are free, waits for the payment, then
// writes. Between the check and the write anything can happen: another
// instance, a lock that expired, a process that was paused for ten seconds.
// So the write must not trust the check; it repeats it, atomically:
//
//	INSERT INTO seats AS s ... ON CONFLICT (screening_id, seat) DO UPDATE
//	    SET booking_id = ..., fence = GREATEST(s.fence, excluded.fence)
//	    WHERE seat_writable(s, excluded.fence, NULL)
//
// seat_writable (migration 0009) is the guard, the one place its condition
// is written: the seat has no booking and no live hold, and the write's
// fence is newer than the seat's. A hold's write calls it the same way, a
// hold's confirmation with the hold's id (the seat must still be held by
// it). The unique key (screening_id, seat) makes two writers of a seat
// queue on one row: the second waits for the first to commit, then
// evaluates the guard against the committed row and finds the seat taken.
// Fewer rows written than seats asked means "refused": the statement raises
// an error (refuse_seats) that undoes the whole write (the booking and any
// seats it did get) and says which seats were taken or held, or that its
// token was stale. Seat
// rows are created by the first booking of a seat, so a screening with
// thousands of seats costs nothing until it sells.
//
// # Why fencing tokens
//
// A distributed lock is a lease: a client that stalls longer than the lease
// (a GC pause, a slow payment, a network partition) loses the lock without
// knowing, and someone else gets it. When the stalled client wakes up, it
// writes as if it still held the lock. A fencing token is a number that grows
// with every grant of the lock. Each seat row keeps the highest token it has
// seen, and the guard refuses a write whose token is not higher: the late
// writer is stopped by the data, not by its own belief. A cancel frees the
// seat but keeps its fence, so an old lock holder still cannot write it.
// A token of 0 means "no fencing" (strategies without tokens).
//
// # Why an advisory lock for migrations
//
// Three instances starting together would all find the schema missing and
// all create it: errors at best, a half-applied migration at worst. Migrate
// takes pg_advisory_lock on one fixed 64-bit key, on one connection that it
// keeps for the whole run, so the instances migrate one at a time; the
// later ones find every file recorded in schema_migrations and do nothing.
// The lock is the session's, so it goes away with the connection even if
// the process dies mid-way.
//
// # Locks that commit with the write
//
// Store.XactLocker is the seat locker of strategy postgres-xact: it opens a
// transaction that first takes pg_advisory_xact_lock on every seat, and
// hands the booking that transaction as its lease (its Tx).
// The seats are read and the booking written through that transaction, and
// its commit releases the locks: lock and write succeed or fail together, so
// nothing can run out before the write and it needs no fencing token. A cancelled
// request rolls the transaction back, which frees the locks at once. The
// price is one connection and one open transaction per booking for as long
// as it pays.
//
// # Round trips
//
// Book alone is one statement, so one round trip, whatever the number of
// seats: SELECT book_seats(...), a PL/pgSQL function (migration 0009) that
// inserts the booking and upserts its seats (passed as arrays and unnested)
// through the guard. When the guard refuses a seat, the function raises an
// error naming the seats taken or held (or a stale fence), which undoes the
// whole statement: the booking and the seats it did get. Alone, the
// statement is its own transaction, committed by the server; in
// XactLocker's transaction, it is part of that one. Cancel is one statement.
//
// # Group commit
//
// GroupCommit is a layer over the plain Store (NewGroupCommit): under
// load, bookings are not alone. Those that come while a batch is on the
// wire queue up and go out together as the next batch (a second goes out
// beside the first only once secondBatchAt wait): one statement, one round
// trip, one transaction and one commit for all of them (groupcommit.go
// explains it whole). The statement calls book_batch
// (migration 0005), which takes the bookings as arrays and runs each as
// book_seats in a subtransaction that undoes only its own writes when
// refused and reports why, as one row per booking. Every caller gets its
// answer once the statement, and so its commit, is answered, and a commit
// that fails or goes unanswered fails, or leaves in doubt, every booking
// of the batch.
// A batch first locks all its seat rows in one order, so that two batches
// (two instances) cannot deadlock on them.
//
//	store, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), postgres.Options{})
//	if err != nil {
//		return err // wraps reservation.ErrUnavailable if the server is down
//	}
//	defer store.Close()
//	svc := reservation.NewService(store, reservation.Options{})
package postgres
