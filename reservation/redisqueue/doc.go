// Package redisqueue is the waiting room of an on-sale in Redis: the
// reservation.Queue that every instance of the API shares, so that buyers
// are admitted first come, first served whichever instance they ask.
//
// A screening's queue is a sorted set of entries by ticket (a counter
// Redis increments, so arrival order is Redis's, not an instance's), a
// sorted set of when each waiting entry was last asked about, and a hash
// of the queue's settings and pace. Every call runs one Lua script that
// first lets entries nobody asked about for LeaveAfter leave, then admits
// from the head of the line every entry whose turn has come by Redis's
// clock: the n-th admission since the line last ran empty is due n /
// AdmitPerSecond seconds after that moment. So the pace is kept without a
// process that ticks, and an entry is admitted once, by whichever call
// comes first after its turn.
//
// Tokens are stored as their SHA-256 hashes: Redis never holds a secret.
//
//	q, err := redisqueue.New(client, redisqueue.Options{Registerer: reg})
//	if err != nil { ... }
//	svc := reservation.NewService(store, reservation.Options{Queue: q})
//
// The scripts use TIME, HSET, ZADD, ZRANGE, ZRANK and friends only, which
// the embedded Redis (miniredis) runs as well.
package redisqueue
