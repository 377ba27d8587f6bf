// Package pglock is a distlock backend on Postgres advisory locks: the
// database that stores the bookings is also the lock service.
//
//	pool, _ := pgxpool.New(ctx, "postgres://...&pool_max_conns=32") // a pool of its own
//	locker := pglock.New(pool, pglock.Options{TTL: 10 * time.Second})
//
//	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
//	if err != nil {
//		return err // distlock.ErrNotAcquired when ctx ended first; else Postgres is down
//	}
//	defer lock.Release(context.WithoutCancel(ctx))
//	// ... check the seats, take the payment ...
//	if err := lock.Err(); err != nil {
//		return err // the session ended: do not write
//	}
//	return store.Book(ctx, seats, lock.Token("{screening-42}:C7"))
//
// # A lock is a session
//
// pg_advisory_lock(id) takes an exclusive lock on a 64-bit number that
// means nothing to Postgres but what the application says. A session lock
// is held until the session unlocks it or ends, so each lock has a
// connection of its own, taken from the pool with Acquire and given back by
// Release. Acquire is enough: pgxpool's health checks and lifetime limits
// only touch idle connections, never one that is lent out. Hijacking the
// connection instead would cost a new connection (TCP, authentication) per
// lock and take it out of the pool's MaxConns bound. The price of Acquire is
// that held and waiting locks use up the pool: give the Locker a pool of its
// own, sized for them, never the store's: a holder that needs the store
// after locking would otherwise wait for a connection that only holders
// and waiters have, and they wait for it. When a deadline passes while
// every connection is lent out, Obtain says so with ErrPoolExhausted (an
// overload, worth a "try later"), not ErrNotAcquired (a held key). A
// connection goes back to the pool
// only when the unlock answered cleanly; in every doubt it is closed, which
// frees whatever its session held, so no pooled connection ever carries a
// lock to its next user. Session locks need a real session: not through
// PgBouncer in transaction pooling mode.
//
// Obtain is one round trip, a pgx.Batch: set the lease (below), then
// pg_advisory_lock for each key in the order of their ids, then the fencing
// tokens. A busy key makes the server process wait in the lock manager, and
// the holder's unlock wakes it at once: the handoff needs no polling. A
// waiter holds the keys before the busy one while it waits; since every
// caller takes keys in ascending id order, no two waiters can wait for each
// other (and Postgres would find such a deadlock and fail one of them).
// TryObtain tries every key with pg_try_advisory_lock in one statement and
// gives back those it got when one was held.
//
// Cancellation needs care. pgx's answer to a cancelled context is to cut
// the connection, but a server process that waits for a lock does not
// notice that its client hung up: it would keep waiting, holding the keys
// it took before the busy one, until it is granted the busy one. So a wait
// runs on a context that the caller's does not cancel, and the caller's
// end sends a Postgres cancel request instead, which stops the wait on the
// server at once; then the connection is closed.
//
// # The key's id
//
// A key becomes a lock id by hashing: the first 8 bytes of the SHA-256 of
// the namespace followed by the key, read as a big-endian signed bigint
// (Locker.KeyID, or in SQL
// ('x' || left(encode(sha256(convert_to('seatlock:' || key, 'UTF8')), 'hex'), 16))::bit(64)::bigint).
// Every process, version and language computes the same id. Two keys
// collide with probability 2^-64; a collision makes two seats wait for each
// other, it never lets two holders in. Advisory locks belong to one
// database: lockers must share the database, not only the server.
//
// # Lease and loss
//
// A session lock has no TTL: it lasts until its session ends. A holder that
// crashes ends its session at once (the kernel closes its socket), but a
// holder that vanishes with its connection open (power lost, network cut)
// keeps its keys until TCP keepalive gives up, two hours by default. So each
// locking session sets idle_session_timeout (Postgres 14+) to the TTL: the
// server ends a session that sent nothing for a TTL, and the lock's
// watchdog sends a check every RenewEvery, which also asks pg_locks whether
// the session still holds every key. The lock is lost, Lost closed and Err
// wrapping distlock.ErrLost, when a check finds the session ended (an
// administrator's pg_terminate_backend, a restart, a failover, a cut
// connection) or the keys gone, or when the lease's deadline passes without
// a successful check. Between the server ending a session and the holder's
// next check, the holder believes in a lock it lost: at most a TTL.
//
// # Fencing
//
// Every acquisition upserts, in the same round trip and while holding the
// keys, a counter per key in the table distlock_fences (FenceTableDDL,
// created before the first Obtain): the fencing tokens of a key strictly
// increase, and as durably as any committed row. The price is one commit,
// so one WAL flush, per Obtain.
//
// # The strongest variant: a transaction lock
//
// XactLock takes pg_advisory_xact_lock inside the caller's transaction, the
// one that writes the booking. The lock is released by the commit or the
// rollback and by nothing else, so the write and the lock live and die
// together: no lease can run out between the check and the write, no paused
// holder can write late, and no fencing token is needed. Of all seatlock's
// strategies it is the only one whose exclusion does not rest on time. It
// costs a transaction (and a connection) held open for the whole critical
// section, payment included, and it only protects writes to that database.
//
// # In the backend table
//
//	| backend  | promises | costs | fails when | fencing |
//	| postgres | exclusion while the session lives; lease = idle_session_timeout; xact variant commits with the write | a connection per held or waiting lock; a commit (WAL flush) per Obtain | Postgres down or failed over (every lock lost); PgBouncer transaction pooling | durable counter row per key, in the lock's round trip |
package pglock
