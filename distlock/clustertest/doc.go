// Package clustertest runs the distlock Redis backend against a Redis
// Cluster: three masters, started on free ports by the tests themselves
// and joined with redis-cli --cluster create. It has no code of its own;
// its tests show that:
//
//   - the backend passes the distlock conformance suite on a Cluster
//     client (scripts, fence counters and the shared pub/sub subscriber);
//   - a multi-seat lock works because every name derived from the seats
//     of one screening ("{screening-1}:A1", "{screening-1}:A2", ...) hashes
//     to one slot, so the acquire script runs on one node;
//   - the screenings, each in a slot of its own choosing, spread over the
//     masters: the lock load is sharded by screening.
//
// A Cluster does not make the lock safer than one Redis: each slot has one
// master, and a failover to a replica that missed the last writes can
// grant a lock twice (replication is asynchronous). It adds capacity, not
// safety; the fenced write to the database stays the guarantee.
//
// The tests need redis-server and redis-cli (Debian package redis-server);
// they are skipped with a message where those are not installed, and fail
// instead under REQUIRE_INTEGRATION=1.
package clustertest
