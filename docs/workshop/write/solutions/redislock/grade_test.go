package redislock_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/docs/workshop/write/grade"
	"github.com/seatlock/seatlock/docs/workshop/write/solutions/redislock"
)

func TestGrade(t *testing.T) {
	grade.RedisLock(t, func(c *redis.Client, prefix string, ttl time.Duration, renew bool) grade.RedisLocker {
		return redislock.New(c, redislock.Options{TTL: ttl, Prefix: prefix, NoRenewal: !renew})
	})
}
