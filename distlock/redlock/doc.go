// Package redlock is a distlock backend on several independent Redis
// servers, with the Redlock algorithm: a lock is held when a majority of
// the servers granted it, and it is still within its lease. One server may
// fail (of three; two of five) and locks keep working.
//
//	var nodes []redlock.Client
//	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
//		nodes = append(nodes, redis.NewClient(&redis.Options{
//			Addr:                  addr,
//			ContextTimeoutEnabled: true, // so that NodeTimeout cuts a hung node short
//			MaxRetries:            -1,   // Redlock retries itself, on every node at once
//			DialerRetries:         1,
//		}))
//	}
//	locker := redlock.New(nodes, redlock.Options{TTL: 10 * time.Second, Fencing: true})
//	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
//	if err != nil {
//		return err // ErrNotAcquired when ctx ended first; ErrUnavailable when a majority is down
//	}
//	defer lock.Release(context.WithoutCancel(ctx))
//
// # The algorithm
//
// The nodes are N Redis servers that know nothing of each other: no
// replication, no Cluster. An attempt to take some keys:
//
//  1. notes the time, picks a random 128-bit owner token, and runs one Lua
//     script on every node at once. On each node the script sets every key
//     to the token with a lease of TTL, or none of them if one is held.
//     Each call has a deadline of its own, NodeTimeout (TTL/20, at most
//     50ms, by default), so a dead node costs the attempt that much, never
//     the lease;
//  2. counts the nodes that granted. The lock is held if at least N/2+1
//     did, and its validity, TTL minus the time the attempt took minus a
//     drift allowance (TTL/100 + 2ms) minus StopMargin, is still positive.
//     Nodes that refused are then topped up (see Waiting) before Obtain
//     returns;
//  3. otherwise releases on every node at once, including those that did
//     not answer (their script may have run all the same), and tries again
//     when a node announces a release of one of the keys (see Waiting), or
//     after a jittered exponential backoff, until the caller's context
//     ends.
//
// N/2+1 is the quorum because any two majorities of N share at least one
// node, and that node grants a key to one holder at a time: two clients
// cannot both hold a majority. The jitter matters because several clients
// that start together can split the vote (each gets a minority), and would
// split it again if they retried in lockstep.
//
// Release and Refresh run on every node too: compare-and-delete and
// compare-and-extend of the owner token, in one script per node. Refresh
// succeeds when a quorum extended the lease within the new validity; the
// watchdog all lease-based backends share refreshes every TTL/3, and the lock is lost (Lost is closed,
// Err wraps distlock.ErrLost) when a quorum refused (the keys are gone or
// someone else's) or when the validity runs out before a renewal reached a
// quorum, for example because a majority of the nodes is down. Release
// returns nil when a quorum still held the keys, distlock.ErrNotHeld when
// fewer did (the lease had run out on the others), and ErrUnavailable when
// too many nodes failed to answer to tell.
//
// The validity is when the holder must have stopped, not when it is told
// to stop. A holder cut off from a majority learns of its loss only from
// its own clock, at the end of its validity, and the nodes may hand the
// keys on as soon as their leases end: with the drift allowance alone,
// 22ms later at a TTL of 2s. Whatever the holder still does under the lock
// in the time it takes to stop (a payment request being cancelled, say)
// then runs beside the next holder. Options.StopMargin takes that time off
// the validity, so that the loss is declared early enough for the holder
// to stop before any node can expire its keys.
//
// The node clients should honour context deadlines
// (ContextTimeoutEnabled), or a hung node holds every attempt up for the
// client's read timeout instead of NodeTimeout; and they should not retry
// or redial at length (MaxRetries -1, DialerRetries 1), or a dead node
// costs every attempt the whole NodeTimeout instead of a refused
// connection.
//
// Nodes that fail are errors, not a busy lock. When failed nodes alone put
// a quorum out of reach in three attempts in a row (at most three
// NodeTimeouts and two short backoffs), Obtain returns an error wrapping ErrUnavailable, so a
// service answers 503 at once instead of waiting out its lock wait.
//
// # What it costs
//
// Every Obtain, Refresh and Release is one round trip to every node, sent
// in parallel: the latency is that of the slowest node of a quorum, and
// the load is N times that of one Redis. The round trips of concurrent
// callers to one node are shared, as in package distlock's Redis backend
// ("Shared round trips" in its doc): calls made while one is on the wire
// to that node leave together, as one pipeline, when it is answered. A
// batch is bounded by NodeTimeout like a lone call, so a hung node costs a
// queued caller at most its wait plus one NodeTimeout. Renewals go out
// alone, never queued: they are what keeps a held lock valid. Fencing
// adds a second round trip to Obtain when the nodes' fence counters
// disagree, and an Obtain won while some node still refused adds a round
// trip to those nodes (see Waiting). A release publishes on a node,
// inside its script, only when somebody failed to take a key there while
// it was held (see Waiting): an uncontended release is a compare and
// delete.
//
// # Waiting
//
// An attempt that finds a key held on a node marks it there as waited
// for, in the same script and the same step: "+" after the holder's owner
// token, which is still the holder's, to refresh and release. The release
// script of every node publishes, on a channel named like the lock key,
// the release of each marked key it deleted, and of no other: a lock
// nobody waited for costs the nodes no PUBLISH. A waiting Obtain, after
// its first failed attempt, subscribes to its keys' channels on every
// node, tries once more when the nodes confirm the subscriptions (a
// release before would otherwise go unseen), and then tries whenever any
// node publishes: each of those attempts marks the keys it finds held,
// whoever holds them by then, so the holder it waits for publishes its
// release; the first node to release wakes it, and a wake-up that comes
// while it is trying is kept, so an attempt that raced the holder's
// release on the other nodes is followed at once by another. A lease
// that runs out publishes nothing: that is noticed by the backoff, which
// never outlasts the shortest lease left on a node that refused. Each
// node's client carries the waiters of a Locker over one pub/sub
// connection of its own (made by the same package as the Redis
// backend's), subscribed to a channel only while somebody waits on it;
// Close stops those connections. Through a client that cannot subscribe,
// waiters of that node poll.
//
// Earlier versions of this package announced every release, on a channel
// "<prefix>released:<key>", and never marked a key. Do not run the two
// side by side on the same nodes: an older holder neither raises nor
// releases a key a newer waiter marked (its Obtain fails, or the key waits
// out its lease), and older waiters hear no release and poll. Stop every
// older instance before a newer one takes locks.
//
// Waiters woken together split the vote more often than waiters that poll
// at jittered times: one wins on a bare quorum, and the nodes it lost
// refused only because a rival's key (or the previous holder's, whose
// release had not reached them yet) sat there for a moment. A lock on a
// bare quorum is lost by one more node failure. So a won attempt tops the
// lock up: it runs the acquire script again, with the same owner token, on
// the nodes that refused, at once and then whenever a node publishes a
// release (polling through a client that cannot subscribe, and when the
// Obtain won at its first attempt, before it ever subscribed), for at most
// NodeTimeout; whatever is still held then is left alone. A node taken so
// is one more node that holds the lock for its owner, refreshed and
// released like the others. Safety does not depend on it: exclusion rests
// on the quorum, and the fencing token was settled by the quorum before
// (the top-up's counter increments only keep the nodes' counters in
// step). What it changes is how many node failures a held lock survives.
// TryObtain tops up with one try, without waiting.
//
// # What Redlock promises, and what it does not
//
// Redlock gives up on a single point of failure without giving up on
// Redis; it does not make the lock a consensus system. Its safety rests on
// assumptions that are worth knowing by name:
//
//   - Nodes keep their data. A node that restarts without persistence
//     forgets the locks it granted, and can grant them again: with one of
//     three nodes so reset, a second client can win a majority while the
//     first still holds. antirez's answer is to run nodes with fsync'ed
//     AOF, or to keep a restarted node out of service for longer than the
//     TTL ("delayed restarts").
//   - Time behaves. Leases expire by each node's clock, and the validity is
//     computed on the client's clock. A node whose clock jumps forward
//     expires a lock early; a client paused (GC, a stopped VM) longer than
//     its validity believes in a lock it lost.
//
// Martin Kleppmann's "How to do distributed locking" (2016) argues that
// for correctness these assumptions are not acceptable, that a lock without
// fencing tokens cannot protect a resource from a paused holder, and that
// Redlock does not produce such tokens. Salvatore Sanfilippo (antirez)
// answered in "Is Redlock safe?" (2016): the algorithm only needs clocks
// whose rate is roughly right, not synchronised clocks; a monotonic clock
// for the validity removes the wall-clock jumps from the client; and
// where a resource can check fencing tokens, it can often use the random
// owner token for a compare-and-set as well. Both are worth reading; the
// lock here takes the practical middle: Redlock for availability, fenced
// writes to the database for correctness.
//
// # Fencing, as far as Redlock allows
//
// With Options.Fencing, the acquire script also moves a counter per key
// on each node, which never expires, to itself plus one, or to the
// client's clock in microseconds when it has fallen more than a second
// behind that clock, read once per attempt and sent to every node (the single-server lock uses its server's clock instead, see
// the distlock package doc; here one reading for all nodes keeps their
// counters in agreement). The token of a key is the highest
// counter among the nodes that granted. Before Obtain returns, a second
// script raises the counter of the key to that token on every granting
// node that still holds the lock, and the lock is held only if a quorum
// was raised in time. When a quorum of the granting nodes answered with the
// token itself for every key, their counters stand at the tokens already,
// set by the acquire script in the step that took the keys: that quorum
// counts as raised and the second script is not sent. Counters agree
// unless an attempt failed on some nodes or a node missed increments, so
// the second round trip is the exception.
//
// That makes tokens strictly increasing for as long as no node loses its
// data: the next holder's quorum shares a node with the quorum raised for
// the previous holder; on that node the next holder's increment came after
// the raise (it could only take the key once the previous holder's key was
// gone, and the raise ran while it was there), so its counter, and so its
// token, is above the previous token. Without the raise, the maximum over
// a quorum is not monotonic: counters drift apart (a node that was down
// missed increments, a failed attempt incremented a few), and the next
// quorum may miss the node with the highest counter.
//
// When a node restarts without persistence its counters are gone; the
// token it issues next is at least the attempt's clock reading, which is
// above every token issued before the restart (a token is never ahead of
// the clock of its issue: one key is not taken twice within a
// microsecond), as long as the clients' clocks agree within the time a
// restart takes and do not step back. When one does step back, the
// resource refuses the older tokens, and RaiseFences, given the fences it
// reports, lifts a quorum's counters past them. So the fenced write keeps accepting the next holder. The
// restart can still break exclusion: the restarted node forgets the locks
// it granted, and may grant one again that is still held elsewhere.
// Run the nodes with appendonly yes where exclusion matters. A consensus
// system (ZooKeeper's zxid, etcd's revision) or the database itself
// (Postgres advisory locks in the booking transaction) gives tokens
// without these ifs.
//
// # Summary
//
//	promises   mutual exclusion while nodes keep their data and clocks run at a sane rate; survives a minority of nodes down
//	costs      one parallel round trip to N nodes per operation (two for Obtain with fencing when counters disagree); waiters woken by pub/sub; a lock won on a bare quorum is topped up
//	fails      a majority down: ErrUnavailable within a few NodeTimeouts, held locks lost at the end of their validity
//	fencing    per-key counters, monotonic while no node loses data (appendonly yes)
package redlock
