// Package grade runs the project's conformance suites on the locks that
// workshop attendees write (docs/workshop/write): the grader of the
// write-it-yourself labs. Each lab's folder has a test that calls it on
// the attendee's code, and docs/workshop/write/solutions calls it on the
// solutions.
//
// The attendee's folders hold skeletons that fail the grader until they
// are written, so their tests grade only when asked, with GRADE=1: a
// plain go test ./... of the project stays green.
package grade

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/keyedlock/keyedlocktest"
)

// Asked skips t unless GRADE=1: the attendee's lock is graded on request.
func Asked(t *testing.T, pkg string) {
	t.Helper()
	if os.Getenv("GRADE") != "1" {
		t.Skipf("your lock is graded on request: GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/%s", pkg)
	}
}

// KeyedLock grades a keyed mutex, stage by stage.
func KeyedLock(t *testing.T, newMutex func() keyedlocktest.Mutex) {
	t.Helper()
	keyedlocktest.RunStaged(t, newMutex)
}

// RedisLocker is what the Redis lock lab asks for: a distlock.Locker that
// says which Redis key holds the lock on a key, so that the grader can
// delete it as a server that lost it would.
type RedisLocker interface {
	distlock.Locker
	LockKey(key string) string
}

// NewRedisLocker makes the attendee's Redis lock on c, writing its keys
// under prefix, with a lease of ttl, renewed unless renew is false (a
// holder that crashed).
type NewRedisLocker func(c *redis.Client, prefix string, ttl time.Duration, renew bool) RedisLocker

// RedisLock grades a Redis lock with distlock's conformance suite, stage
// by stage, on the Redis server of the project's tests. Every key it
// writes is under one prefix of its own, deleted when it ends.
func RedisLock(t *testing.T, newLocker NewRedisLocker) {
	t.Helper()
	const ttl = time.Second
	url := testenv.RedisURL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse Redis URL: %v", err)
	}
	prefix := "seatlock:lab:grade:" + uuid.NewString()[:8] + ":"
	admin := redis.NewClient(opt)
	t.Cleanup(func() { deleteUnder(t, admin, prefix); _ = admin.Close() })
	client := func(t *testing.T) *redis.Client {
		c := redis.NewClient(opt)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	distlocktest.RunStaged(t, func(t *testing.T) distlock.Locker {
		return newLocker(client(t), prefix, ttl, true)
	}, distlocktest.Options{
		TTL:     ttl,
		Fencing: true,
		NewNonRenewing: func(t *testing.T) distlock.Locker {
			return newLocker(client(t), prefix, ttl, false)
		},
		Expire: func(t *testing.T, key string) {
			lockKey := newLocker(admin, prefix, ttl, false).LockKey(key)
			if n, err := admin.Del(t.Context(), lockKey).Result(); err != nil || n != 1 {
				t.Fatalf("delete the lock key %s = %d, %v; want 1, nil (does LockKey name the key your lock writes?)", lockKey, n, err)
			}
		},
	})
}

// PgLocker is what the Postgres lock lab asks for: a distlock.Locker that
// keeps its leases in the lab's table lab_locks, and Setup, which creates
// that table.
type PgLocker interface {
	distlock.Locker
	Setup(ctx context.Context) error
}

// NewPgLocker makes the attendee's Postgres lock on pool, with a lease of
// ttl, renewed unless renew is false (a holder that crashed).
type NewPgLocker func(pool *pgxpool.Pool, ttl time.Duration, renew bool) PgLocker

// PgLock grades a Postgres lock with distlock's conformance suite, stage
// by stage, in a database of its own, dropped when it ends. Every Locker
// has a pool of its own, as a separate process would.
func PgLock(t *testing.T, newLocker NewPgLocker) {
	t.Helper()
	const ttl = time.Second
	db := testenv.NewDatabase(t)
	pool := func(t *testing.T) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(db)
		if err != nil {
			t.Fatalf("parse Postgres URL: %v", err)
		}
		cfg.MaxConns = 3
		p, err := pgxpool.NewWithConfig(t.Context(), cfg)
		if err != nil {
			t.Fatalf("Postgres pool: %v", err)
		}
		t.Cleanup(p.Close)
		return p
	}
	admin := pool(t)
	if err := newLocker(admin, ttl, false).Setup(t.Context()); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	distlocktest.RunStaged(t, func(t *testing.T) distlock.Locker {
		return newLocker(pool(t), ttl, true)
	}, distlocktest.Options{
		TTL:     ttl,
		Fencing: true,
		NewNonRenewing: func(t *testing.T) distlock.Locker {
			return newLocker(pool(t), ttl, false)
		},
		// The lease ends as if it had run out long ago: even a renewal
		// that started before this statement does not bring it back.
		Expire: func(t *testing.T, key string) {
			tag, err := admin.Exec(t.Context(), `UPDATE lab_locks SET expires_at = '-infinity' WHERE key = $1 AND expires_at > now()`, key)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("end the lease of %q in lab_locks: %d rows, %v; want 1 row (does your lock keep a held key's lease in lab_locks.expires_at, as Schema says?)", key, tag.RowsAffected(), err)
			}
		},
	})
}

// deleteUnder deletes every key of c whose name starts with prefix.
func deleteUnder(t *testing.T, c *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("delete the grader's keys %s*: %v", prefix, err)
	}
}
