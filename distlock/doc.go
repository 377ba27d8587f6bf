// Package distlock provides locks that hold across processes and machines:
// one small interface, Locker, and backends that implement it. This
// package holds the Redis backend, the one this documentation explains;
// Postgres advisory locks (pglock), Redlock (redlock), file locks (flock)
// and ZooKeeper (zklock) implement the same interface in packages of
// their own.
//
//	locker := distlock.NewRedis(client, distlock.RedisOptions{TTL: 10 * time.Second})
//	defer locker.Close()
//
//	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
//	if err != nil {
//		return err // ErrNotAcquired when ctx ended first; else Redis is down
//	}
//	defer lock.Release(context.WithoutCancel(ctx))
//	// ... check the seats, take the payment ...
//	if err := lock.Err(); err != nil {
//		return err // the lease was lost: do not write
//	}
//	return store.Book(ctx, seats, lock.Token("{screening-42}:C7")) // a fenced write
//
// # Why each piece is there
//
// An owner token. A lock key holds a random 128-bit value chosen by its
// holder. Without it, a holder whose lease ran out (a long GC pause, a slow
// payment) would, on release, delete the key that somebody else holds by
// now, and let a third party in beside them. With it, release and refresh
// only touch a key that still holds the caller's own token (with or
// without a waiter's mark, below).
//
// Lua scripts. "Compare the token, then delete" is two steps; between a GET
// and a DEL the lease can run out and another client take the key. A Lua
// script runs atomically on the server, so compare-and-delete,
// compare-and-extend, and "take all these keys or none of them" cannot be
// interleaved with anybody else's commands. Each operation is one script,
// so one round trip: Obtain and Release send exactly one EVALSHA each.
//
// A lease and a watchdog. A lock held by a process that crashed must free
// itself, so every key expires after the TTL. A holder that is still alive
// must not lose the lock just because its work takes longer than the TTL,
// so a watchdog extends the lease every RenewEvery (TTL/3 by default).
// When a renewal finds the key gone or taken, or renewals keep failing
// until the lease's deadline, the lock is lost: Lost is closed and Err
// returns an error wrapping ErrLost. A single failed renewal is not a loss
// while the lease is still valid. The holder must check Err before it
// writes, and stop when Lost is closed.
//
// A margin to stop. The lease's deadline is counted on the holder's clock
// from when it sent the renewal, less one percent for clocks that run at
// different rates: only that much before Redis may expire the keys and
// hand them on. Stopping takes time (cancelling a request in flight,
// reading its answer), and whatever the holder does until it has stopped
// runs beside the next holder. RedisOptions.StopMargin moves the loss
// that much earlier, so that a holder which stops within the margin has
// stopped before the lease can end on the server. pglock and redlock have
// the same option; zklock declares the loss a third of the session
// timeout after it noticed a disconnection (see its doc), and flock has
// no lease.
//
// One watchdog serves every lock of a locker (package
// distlock/internal/watchdog, shared by the Redis, Redlock and Postgres
// backends): one goroutine, one timer, and a heap of the held locks
// ordered by when each is next due.
// Two timers per lock would do the same job, but a service that takes
// thousands of locks a second would pay for creating and stopping them on
// every lock, while almost none ever fires: most locks are released long
// before their first renewal. Each renewal runs in a goroutine of its own,
// bounded by the lease's deadline, so that one hanging on a dead
// connection neither delays the renewals of the other locks nor the loss
// of its own lock, which the watchdog declares at the lease's deadline all
// the same. Release takes the lock out of the
// heap and waits for its renewal in flight, if any; Close stops the
// watchdog, waits for it and its renewals, and declares the locks still
// held lost, since nobody renews them any more.
//
// Fencing tokens. Even so a holder can be wrong about holding the lock: a
// process pause can last longer than the lease, and the holder wakes up,
// checks nothing, and writes. No lock service can stop that from its side.
// What can stop it is the resource that is written to: every acquisition
// gets a fencing token per key, a number that only grows, and the storage
// refuses a write whose token is older than the last one it saw for that
// seat. The pausing holder's write then fails instead of double-booking.
//
// The token is issued by the script that takes the key: the key's fence
// counter plus one, or the server's clock in microseconds (TIME) when the
// counter has fallen more than a second behind it; it becomes the counter.
// The counter makes tokens strictly increase while Redis keeps its data. The
// clock makes them increase across a loss of the data too (a restart
// without persistence, a failover to a replica that never saw the last
// write), when a counter alone would start again from 1 and every seat
// written before would refuse the next holder as stale. The argument: a
// token is never above the time of its issue, because one key is not
// taken twice within a microsecond (each take follows a release, a round
// trip of its own), so every token is at most the clock when it was
// issued, and a token issued after the loss is at least the clock then,
// which is later. It holds as long as the clock of the server that issues
// tokens does not go back by more than the loss took: no clock stepped
// back across a restart, and replicas' clocks agree with the primary's
// within the seconds a failover takes (NTP does far better). Microseconds
// since 1970 stay below 2^53 until the year 2255, so tokens fit an int64,
// a Postgres bigint and a JSON number (exact up to 2^53).
//
// The same argument lets a counter expire: once it is gone, the next token
// comes from the clock and is above every token before it, as after a
// restart. Each token sets its counter to expire RedisOptions.FenceTTL
// later (default a day), so the counters of seats that nobody locks any
// more leave Redis instead of growing with every screening ever sold; the
// expiry is also the longest the clock may step back between two locks of
// a seat.
//
// When the clock does step back further (a restart with the clock behind,
// a replica whose clock lags), tokens from the clock are older than the
// ones the resource saw, and it refuses them until the clock catches up.
// The resource knows the newest token it saw, so its refusal can say so,
// and RaiseFences lifts the counters to it: the next token is newer, and
// the lock works again after one refused attempt. Raising never lowers a
// counter, so it is safe whoever reports the fence.
//
// Waiting by push. An attempt that finds a key held marks it as waited
// for, in the same script: it writes "+" after the holder's token. A
// blocked Obtain then subscribes to the release channel of its keys, and
// only then looks at the keys again, so a release between its first look
// and the subscription is not missed; if the key is still held, by the
// same holder or a new one, that look marks it again. Release publishes on
// the channel of every marked key it frees, in the same script, and the
// waiter retries at once. So every waiter still asleep has marked the key
// it waits for after it subscribed, and is woken when that key is
// released; and a key nobody waited for, the common case, is released
// without a PUBLISH. A lease that simply expires publishes nothing, so
// waiters also poll, with jittered exponential backoff and never later
// than the holder's remaining lease. All waiters of one Redis locker share
// one pub/sub connection. The wait is bounded by the caller's context
// only, never by the TTL.
//
// Shared round trips. When many goroutines lock and unlock through one
// Redis locker at once, their scripts travel together: a call that finds
// nothing on the wire goes out at once, alone; calls made while it is on
// the wire queue up, and once it is answered and its callers have taken
// their replies, they go out as one pipeline, one write and one read for
// all of them. Callers who come straight back, as goroutines locking and
// unlocking in a loop do, join that pipeline instead of queueing behind
// it, so a busy locker sends one wave of calls per round trip. Nothing
// ever waits to fill a batch, so a lone caller pays nothing for it, and a
// busy service spends far less of its CPU (and of Redis's) on system calls
// (docs/benchmarks-distlock.md measures it against libraries that make
// one round trip per call). Every call is still its own script run,
// atomic on its own; a queued call whose context ends before its batch
// leaves is withdrawn unsent.
//
// Errors from the backend are not ErrNotAcquired. When Redis cannot be
// reached, Obtain returns that error at once, so a service can answer 503
// instead of waiting out its lock wait and answering "busy".
//
// # What Redis can and cannot promise
//
// On a single Redis server these locks exclude each other as long as the
// server keeps its data and the clocks involved run at a sane rate. Beyond
// that:
//
//   - Replication is asynchronous. If the primary fails after granting a
//     lock but before a replica received the write, the promoted replica
//     does not know the lock, and grants it again. Two holders, both sure.
//     RedisOptions.WaitReplicas makes a grant wait for replicas to
//     acknowledge it (Redis WAIT), which closes that window for the
//     replicas that did; it is not a consensus (see its comment).
//   - A restart without persistence loses every lock key and every fence
//     counter. The locks granted before are forgotten (a second holder may
//     get one at once), but fencing tokens go on increasing, because they
//     carry the server's clock (see Fencing tokens above), so the fenced
//     write still refuses the holder from before the loss. Run with
//     appendonly yes all the same: it keeps the locks as well.
//   - Leases are time. The server expires keys by its clock; the holder
//     trusts its own monotonic clock, and gives up one percent of the TTL
//     early. A process pause (GC, a swapped-out VM, a stopped container)
//     longer than the lease makes the holder believe in a lock it lost; it
//     is the fencing token that keeps its late write out.
//
// So a Redis lock is an efficiency lock (it keeps the work from being done
// twice, most of the time), and the fenced write to the database is the
// correctness guarantee. Martin Kleppmann's essay "How to do distributed
// locking" (2016) makes this argument against Redlock, and is worth
// reading in full (docs/workshop/10-redlock.md walks through it).
//
// # Redis keys
//
// For a key "{screening-42}:C7" and the default prefix, the lock lives at
// "seatlock:lock:{screening-42}:C7" and its fence counter at
// "seatlock:fence:{screening-42}:C7"; its release is published on a
// channel of the lock's own name (pub/sub channels are not keys, so the
// two never meet). The caller's key stays whole, so its hash tag keeps
// every name of one screening in one Redis Cluster slot, and a multi-key
// lock on seats of one screening is one script on one node. The lock key
// holds its holder's owner token, 32 hexadecimal digits, followed by "+"
// once somebody waits for it.
//
// Earlier versions of this package announced releases on a channel
// "seatlock:released:..." and never marked a key. Do not run the two side
// by side on one Redis: an older holder neither renews nor releases a key
// a newer waiter marked (its lock is lost, 409 lock_lost, or the key
// waits out its lease), and older waiters hear no release. Stop every
// older instance before a newer one takes locks.
package distlock
