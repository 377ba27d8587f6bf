// Package cluster starts a whole seatlock deployment on one machine, from
// the module's own code, for tools that break it on purpose: API instances
// as real processes, a Redis primary with a replica and Sentinels, a
// Postgres cluster of its own, an in-memory payment provider, and fault
// proxies on the links between the instances and their backends.
//
// Every part can be broken the way production breaks it: an instance
// killed (SIGKILL) or paused (SIGSTOP), the Redis primary killed so that a
// Sentinel promotes the replica, Redis emptied, its wall clock jumped,
// Postgres stopped at once and started again, a link cut or slowed.
//
//	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, APIBinary: bin, Instances: 3})
//	if err != nil { ... }
//	defer c.Stop()
//	c.APIs[0].Kill()
//	_ = c.APIs[0].Start(ctx)
//
// Stop ends everything. Every server, Postgres's postmaster included, is
// a child of the caller and dies with it even without Stop (Linux: the
// kernel kills it when the parent thread dies; the postmaster's own
// children end when they find it gone). A caller killed before Stop
// leaves only files behind, its directories under the temporary
// directory: made with TempDir, they name their owner, and RemoveOrphans,
// run by the next caller, removes those whose owner has ended. Nothing
// here listens beyond 127.0.0.1.
package cluster
