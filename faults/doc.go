// Package faults holds the fault tests of seatlock: real API processes on a
// real Redis and a real Postgres, and something going wrong on purpose
// while bookings are in flight. It has no code of its own, only tests; the
// figures they produce are in docs/reliability.md.
//
// Each test builds nothing but what it needs: TestMain builds cmd/api once,
// every test starts instances as child processes on 127.0.0.1:0, and kills
// every process it started when it ends. Outages use servers of their own
// (a redis-server and a Postgres cluster started by the test), never the
// machine's shared ones.
//
//	TEST_REDIS_URL=redis://127.0.0.1:6379/0 \
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	go test -race -v ./faults/
//
// # What each fault shows
//
// TestHolderCrash: a lock held by a process that dies is not freed by the
// death; nobody is there to release it. The lease is what frees it: the
// seats stay locked until the TTL runs out, then another instance books
// them. The booking that died wrote nothing, since a multi-seat booking
// is one transaction written after the payment; so the seats are free or
// booked, never half.
//
// TestHolderPause: Martin Kleppmann's argument, run. A process stopped
// (SIGSTOP, a GC pause, a frozen VM) past its lease wakes up believing
// it holds the lock. When it wakes in its payment, its watchdog usually
// notices first and the booking aborts; but when the pause falls between
// its last check and the write landing (the test holds its write in a
// proxy to make that certain), only the database can stop the stale
// write. With guard=fence it does: the seat must be free, and the lock's
// fencing token must be newer than the seat's last one. With guard=off
// the stale write wins and the seat is confirmed to two customers. The
// lesson: a lease-based lock alone is an efficiency device; the fenced
// write is what makes it safe. The payment provider shows the lock's side:
// a holder paused in its payment is charged while the next holder is.
//
// TestLostLock: the lock key vanishes (deleted, or an expiry) while the
// booking pays. The watchdog's next renewal finds the key gone, closes the
// lease's Lost channel, and the booking stops before it writes: 409
// lock_lost, the seats free. It notices at the next renewal (every TTL/3),
// not at once.
//
// TestRedisOutage and TestPostgresOutage: a backend that dies under load
// makes bookings fail at once with 503 unavailable, not after waiting out
// LOCK_WAIT for a lock that cannot be had, and makes /readyz answer 503
// so that a load balancer stops sending bookings. Nothing is booked that
// nobody was told of, and when the backend returns the same process books
// again, with no restart. Every answer is checked against the final seat
// map: no seat confirmed twice, no confirmed booking missing.
//
// TestRestartMidLoad: a backend restarts (Redis without its data, as a
// Redis without persistence comes back; Postgres stopped at once and
// started) while two instances book on one screening. Safety must hold
// for every strategy: every answer 201, 409 or 503, no seat confirmed
// twice, none lost. A seat booked and cancelled before the restart must be
// bookable after it: Redis comes back without its fence counters, and the
// fencing tokens must still be above the ones the seats remember (they
// carry the server's clock; see distlock's package doc and
// docs/reliability.md). Redlock runs under one of its three nodes
// restarting empty, ZooKeeper under its server restarting (with its data),
// both under Postgres restarting too. The payment provider counts
// overlapping charges: two lock holders at once. A fast subset runs by
// default; with SEATLOCK_FAULT_MATRIX=1 every strategy runs under every
// restart that touches it.
//
// TestRedlockNodeAmnesia: a Redlock holder pays while one node restarts
// empty, and another instance books the same seat. When all three nodes
// had granted the lock, the two that kept it are a majority and the
// second booking waits; when one node was down at the grant, the restarted
// node and that one make a second majority, and two holders pay at once.
// The fenced write keeps the seat right either way.
//
// TestNetworkFaults: latency, a slow link or a cut between one instance
// and its Redis or Postgres, or its lock service (one or two of Redlock's
// three nodes, the ZooKeeper server), made by Shopify's toxiproxy as a
// library, while a second instance books on a clean network. A cut is a
// prompt 503 on the cut instance only; latency slows it without refusing
// anything. A fault on one Redlock node is no outage, on two it is; a
// ZooKeeper cut longer than the session expires the instance's session,
// and it books again on a new one.
//
// TestHolderCutOff (only with SEATLOCK_FAULT_MATRIX=1): the holder of a
// seat's lock is cut off from its lock service (two of three Redlock
// nodes, or ZooKeeper) in the middle of a long payment, for longer than
// its lease or session, and another instance books the seat. The holder
// must notice the loss by itself, cut off as it is, and stop before its
// payment ends: 409 lock_lost. The payment provider shows how close the
// handover came: ZooKeeper's client gives up well before the server
// expires the session; a Redlock holder gives up its drift allowance and
// the service's stop time (reservation.StopTime, the lockers' StopMargin)
// before the nodes expire its keys, so that its charge, cancelled and
// voided by its payment id once the loss is seen, has ended before anybody
// else can take the seat.
//
// TestRedisFailover: a Redis primary, a replica and a Sentinel; the
// replica falls behind, the primary is killed under load while a holder
// pays for a probe seat, and the instances, given the Sentinel as
// REDIS_URL (redis+sentinel://), follow the promoted replica. The payment
// provider counts overlapping charges: without REDIS_WAIT_REPLICAS the
// promoted replica grants the probe seat's lock a second time, to a holder
// that pays while the first still does; with REDIS_WAIT_REPLICAS=1 it
// cannot (the test requires 0 overlaps), and the price is 503s until a
// replica is back.
//
// TestLockServerClock: the lock's Redis servers run with a fast clock (2x,
// 4x) or a wall clock that jumps ahead, by a small LD_PRELOAD library
// (internal/cluster/fastclock/fastclock.c), while customers of two
// instances book one seat through a payment provider counting overlapping
// charges. Safety must
// hold; overlaps must show exactly where a lease expires on the server (or
// a majority of Redlock's) before the holder renews it.
//
// TestStaleCharge: a holder that cannot hear of its loss (cut from Redis,
// its lock key deleted) charges with its old fencing token after a newer
// holder began paying. The payment provider that checks fences refuses
// that charge, and the booking answers 409 lock_lost with nothing charged;
// the plain provider takes it, and the fenced write then decides which of
// the two books.
//
// Under SEATLOCK_FAULT_MATRIX=1 every case of the tests above that charge
// through the payment provider runs twice: with the plain provider and
// with the one that checks fencing tokens.
//
// The money tests below always run with both. Each judges the ledger after
// settling: the provider's charges less its refunds must equal the
// bookings confirmed in the database, with no payment still pending or
// refunding, within reservation.PaymentsSettleWithin (the payment delay
// plus 12 s until a payment is due, plus one reconciler round) and a
// margin; a failure names the difference and the open payments.
//
// TestMoneyHangUps: clients give up just after the payment delay, and
// nothing else goes wrong. The charge belongs to the service, not to the
// client's connection: it completes, and the booking is written or the
// charge given back, whoever still listens; the seat's lock is held until
// the charge has answered, so no second holder pays for the seat meanwhile
// (0 overlaps), and no payment is left for a reconciler.
//
// TestMoneyHolderPaused: a holder stopped (SIGSTOP) in its charge past its
// lease and its payment client's deadline, while another instance books
// the seat. Its charge went through at the provider; it must not book
// with it (409 or 503, never 201), and the charge must be given back:
// by the holder itself when it resumes before its payment is due, or by
// another instance's reconciler when it stays stopped until then.
//
// TestMoneyKilledBeforeCommit: a holder killed (SIGKILL) after its charges
// and before its commits, held in a proxy to make that certain. A customer
// who retries the same request (the same Idempotency-Key) on another
// instance is booked under the payment the dead process recorded, and the
// provider answers the retry with the first charge: charged once. A
// customer who never retries is refunded by a reconciler, since no
// process remembers that charge otherwise.
//
// TestLoad (only with SEATLOCK_LOAD_BOOKINGS set to a count of bookings):
// the real loadgen binary against three instances, every scenario under
// every safe strategy with a shared lock service (keyed+redis, redis,
// postgres, file), with loadgen's verifier and its porcupine
// linearizability check required to find nothing.
package faults
