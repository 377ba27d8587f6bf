// Package zklock is a distlock backend on Apache ZooKeeper: the classic
// fair lock recipe, in which waiters queue up and get a key in the order
// they arrived.
//
//	locker, err := zklock.Dial(ctx, []string{"zk1:2181", "zk2:2181", "zk3:2181"},
//		10*time.Second, zklock.Options{})
//	if err != nil {
//		return err
//	}
//	defer locker.Close()
//
//	lock, err := locker.Obtain(ctx, "{screening-42}:C7")
//	// ... the same as every distlock backend: Err before the write,
//	// Token for the fenced write, Release at the end.
//
// # The recipe
//
// Every key is a directory znode, Root + "/" + the key escaped into one
// name ("/seatlock/locks/%7Bscreening-42%7D:C7"). To take the key, a client
//
//  1. creates an ephemeral, sequential node in it, "lock-": the server
//     appends a number that grows with every child created in the
//     directory, so the nodes form a queue in arrival order;
//  2. lists the directory: if its node has the lowest number, it holds the
//     key;
//  3. otherwise it sets a watch on the node right before its own, and only
//     on that one, and waits for the watch to fire, then goes back to 2.
//
// Watching only the predecessor means a release wakes exactly one waiter:
// watching the whole directory would wake every waiter on every change, to
// find that all but one must wait again (the "herd effect"). The
// predecessor may also go away because its owner gave up waiting; the
// listing in step 2 then finds a new predecessor, and the queue stays in
// order. Release deletes the node, which fires its successor's watch.
//
// A directory exists only while a node is queued in it. Release (or an
// Obtain that gives up) then asks the server to delete the directory too,
// which it refuses while another node is in it: the last node to go takes
// the directory along, and the tree does not grow with every seat ever
// booked. So the create in step 1 may find no directory, never made or
// just deleted by a releaser; it makes it and creates again. The nodes of
// Root above the directories stay. A directory whose last node went with
// an expired session, not by a release, stays until the next release of
// its key: an empty node costs the ensemble a few bytes.
//
// Several keys are taken one after another in sorted order, each by the
// recipe, so two Obtains that share keys queue on them in the same order
// and cannot deadlock. If a later key cannot be had, the nodes already
// created are deleted: all or nothing.
//
// Ephemeral means the node lives as long as the client's session. There is
// no lease to renew: the client keeps its session alive by pinging, and a
// process that dies stops pinging, so the server expires its session after
// the session timeout and deletes its nodes, which hands its keys on.
// Refresh only checks that the nodes are still there.
//
// A create whose reply is lost with the connection may still have created
// the node, and that node would block the key as long as the session
// lives. So the node's name starts with a random guid
// ("_c_<guid>-lock-0000000042", the "protected" create of Curator and
// go-zookeeper), by which the client finds the node again after the
// reconnection. A node that cannot be deleted now (its create or its
// delete failed) is handed to a sweeper goroutine of the Locker that
// deletes it once it can, unless the session ended and took it along.
//
// # Fencing tokens
//
// Lock.Token is the czxid of the node that holds the key: the id of the
// transaction that created it. Zxids grow strictly over the whole ensemble
// and never repeat (short of losing the ensemble's data), and the holders
// of a key hold it in the order their nodes were created, so every holder
// of a key gets a larger token than every holder before it.
//
// The node's sequence number would grow too, but it is a counter of its
// parent directory (its cversion): delete the directory and it starts again
// from 0. The key directories here are deleted by the last releaser, and
// an operator may clean up the tree; the czxid does not care. (Sequence
// numbers are also 32-bit and would wrap after 2^31 creates in one
// directory.)
//
// # When the holder loses the lock
//
// A lock is lost when its node goes away while held: the session expired,
// or someone deleted the node. The holder learns it from
//
//   - a watch on its own node: it fires when the node is deleted, and ends
//     (also a loss) when the client reconnects and finds its session
//     expired, or when the connection is closed;
//   - with Dial, the session's events: StateExpired is a loss; a
//     disconnection puts the lock in doubt.
//
// In doubt, because a client cut off from every server cannot know whether
// its session lives on: the server expires it the session timeout after
// it last heard from the client. The client notices the silence after 2/3
// of the session timeout at the latest; a Locker from Dial waits 1/3 more
// and, if no server took the session back by then, declares its locks lost.
// That is about when the server may hand the keys on (the test
// TestSessionExpiryHandsOver checks it: the holder cut off is told of its
// loss before a waiter gets the key, and the waiter gets it no sooner than
// a session timeout after the server last heard from the holder, whose
// client pings every third of the timeout).
// The window is not closed, only narrowed: network delay, a process pause
// or a clock running at another rate can still let an old holder believe
// in its lock a moment after the server handed the key on. That is what
// the fencing token is for. A Locker from New does not see the session
// events, and while it cannot reach a server it does not declare any loss.
//
// # What it promises and costs
//
//   - Promises: mutual exclusion per key as long as the ZooKeeper ensemble
//     keeps a quorum (writes are agreed by a majority, so a leader's crash
//     loses no lock, unlike Redis' asynchronous replication); fairness
//     (first come, first served); no polling, a release wakes one waiter;
//     a crashed holder's keys are freed after the session timeout; fencing
//     tokens that never repeat.
//   - Costs: an Obtain is three round trips (create, list, watch its node),
//     and two more when the key has no directory (nobody holds or waits
//     for it: the failed create and the directory's); a Release two
//     (delete the node, then its directory if empty). Creates and deletes
//     are quorum writes that each server logs to disk before it answers. A separate service (three or five
//     JVMs) to run. One watch per held key and one goroutine per held key.
//   - Fails: without a quorum, nothing can be taken or released (Obtain
//     returns the client's error, not ErrNotAcquired); a holder cut off
//     from the ensemble loses its locks after the session timeout, and so
//     does a holder whose process pauses longer than it; a freed key waits
//     for the session timeout if its holder died without releasing.
//   - Fencing: yes, the czxid of the holder's node.
//
// # No call waits for ever
//
// Every ZooKeeper call of a Locker waits for its answer as long as its
// ctx allows and Options.CallTimeout at most (10 s, or a longer session
// timeout, by default), and a wait in a key's queue as long as ctx
// allows; Close ends every wait at once. A call not answered in time
// fails with an error wrapping ErrNoAnswer. The server may still apply it
// later: a node created that way, or one that could not be deleted, is
// left to the sweeper (TestObtainGivenUpLeavesNoNode). Dial whose ctx
// ends first returns within a few seconds, and so does Close, whatever
// the servers do.
//
// # The client library
//
// The ZooKeeper client is github.com/z-division/go-zookeeper, a fork of
// go-zookeeper/zk kept by Vitess. It reads and writes the last zxid it saw
// atomically: go-zookeeper/zk (up to v1.0.4) writes it in its receiving
// goroutine while a reconnection reads it to set the watches again, a data
// race the race detector reports when an answer to a call comes during a
// reconnection (TestCallsAcrossReconnection). The fork has no container
// nodes (which the server deletes once empty), so the key directories are
// plain nodes that their last releaser deletes, as above.
//
// The library's calls take no context and have no bound of their own.
// While the client is stuck in its handshake with a server that took the
// connection but does not answer (one still starting, or overloaded), a
// call waits for the handshake to time out, after ten read timeouts
// (almost seven session timeouts), and then for the next round of the
// servers; one that the library's Close leaves queued (its last flush of
// the queue can miss a call that was waiting for room in it) is never
// answered. So each call runs in a goroutine of its own, and the Locker
// waits for it only as long as said above: TestDialServerThatNeverAnswers,
// TestCallsToServerThatNeverAnswers and TestHeldLockWhenServerStopsAnswering
// check it against a server that accepts connections and never answers.
package zklock
