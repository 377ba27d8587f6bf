//go:build !labsolution

package main

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/docs/workshop/write/keyedlock"
	"github.com/seatlock/seatlock/docs/workshop/write/pglock"
	"github.com/seatlock/seatlock/docs/workshop/write/redislock"
)

// labCode says whose locks the lab strategies run: the attendee's.
const labCode = "docs/workshop/write (yours; -tags labsolution runs the solutions)"

func newLabKeyed() keyMutex { return new(keyedlock.Mutex) }

func newLabRedis(c *redis.Client, ttl time.Duration) distlock.Locker {
	return redislock.New(c, redislock.Options{TTL: ttl, Prefix: "seatlock:lab:"})
}

func newLabPg(pool *pgxpool.Pool, ttl time.Duration) labPgLocker {
	return pglock.New(pool, pglock.Options{TTL: ttl})
}
