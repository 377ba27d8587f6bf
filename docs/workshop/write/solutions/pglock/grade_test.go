package pglock_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/docs/workshop/write/grade"
	"github.com/seatlock/seatlock/docs/workshop/write/solutions/pglock"
)

func TestGrade(t *testing.T) {
	grade.PgLock(t, func(pool *pgxpool.Pool, ttl time.Duration, renew bool) grade.PgLocker {
		return pglock.New(pool, pglock.Options{TTL: ttl, NoRenewal: !renew})
	})
}
