// Package pglock is a solution of the write-it-yourself Postgres lock lab
// (docs/workshop/write/README.md): a distlock.Locker on a lease table. A
// row of lab_locks is a key's lock: its holder (owner), the lease's end by
// the database's clock (expires_at) and the key's last fencing token
// (fence), raised in the same statement that takes the key: a token is as
// durable as a committed row. Every step is a short statement on a pool;
// no connection is held while a lock is (distlock/pglock, a session
// advisory lock per holder, is the other road).
package pglock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatlock/seatlock/distlock"
)

// Schema is the lease table. A row is never deleted: its fence must go on
// growing for as long as writes fenced with it can arrive.
const Schema = `CREATE TABLE IF NOT EXISTS lab_locks (
	key        text PRIMARY KEY,
	owner      text NOT NULL,       -- the holder's random id
	fence      bigint NOT NULL,     -- the last fencing token of key
	expires_at timestamptz NOT NULL -- the lease's end, by the database's clock
)`

// acquireSQL takes every key of $1 whose lease has ended (or that has no
// row yet) for the owner $2, for the lease $3, raising its fence, and
// returns a row for each key it took. The keys are taken in order, so two
// acquires of overlapping sets never wait for each other in a circle.
const acquireSQL = `INSERT INTO lab_locks AS l (key, owner, fence, expires_at)
SELECT k, $2, 1, now() + $3::interval FROM unnest($1::text[]) AS k ORDER BY k
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, fence = l.fence + 1, expires_at = excluded.expires_at
WHERE l.expires_at <= now()
RETURNING key, fence`

// refreshSQL extends to $3 the leases that $2 still holds among the keys
// $1; releaseSQL ends them. Both lock the rows in key order first, as
// acquireSQL does. A lease that ran out is no longer its holder's, even
// if nobody took the key since.
const (
	refreshSQL = `UPDATE lab_locks SET expires_at = now() + $3::interval
WHERE key IN (SELECT key FROM lab_locks WHERE key = ANY($1) ORDER BY key FOR UPDATE)
  AND owner = $2 AND expires_at > now()`
	releaseSQL = `UPDATE lab_locks SET expires_at = now()
WHERE key IN (SELECT key FROM lab_locks WHERE key = ANY($1) ORDER BY key FOR UPDATE)
  AND owner = $2 AND expires_at > now()`
)

// DB is what a Locker needs of Postgres: a *pgxpool.Pool has it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Options configure a Locker. The zero value works.
type Options struct {
	// TTL is the lease of a lock (default 10s), renewed every TTL/3.
	TTL time.Duration
	// NoRenewal stops the renewal of leases: a lock then runs out after
	// one TTL, as a crashed holder's would. For tests.
	NoRenewal bool
}

// Locker takes locks on keys in the table lab_locks of one database.
type Locker struct {
	db   DB
	opts Options
}

var _ distlock.Locker = (*Locker)(nil)

// New returns a Locker on db. Call Setup once before the first Obtain.
func New(db DB, opts Options) *Locker {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Second
	}
	return &Locker{db: db, opts: opts}
}

// Setup creates the lease table if it is missing. Processes that start
// together take turns on a transaction advisory lock: CREATE TABLE IF NOT
// EXISTS run twice at once can fail.
func (l *Locker) Setup(ctx context.Context) error {
	return pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('lab_locks'))`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, Schema)
		return err
	})
}

// errHeld is what acquire returns when a key is held by someone else.
var errHeld = errors.New("pglock: a key is held")

// Obtain takes every key, all or nothing, trying again until ctx ends.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	owner := uuid.NewString()
	for {
		start := time.Now()
		tokens, err := l.acquire(ctx, keys, owner)
		switch {
		case err == nil:
			return l.held(keys, owner, tokens, start), nil
		case ctx.Err() != nil:
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		case !errors.Is(err, errHeld):
			return nil, fmt.Errorf("pglock: acquire: %w", err)
		}
		// Held by someone: look again a little later, at a random moment so
		// that waiters do not all come back at once.
		select {
		case <-time.After(5*time.Millisecond + rand.N(20*time.Millisecond)):
		case <-ctx.Done():
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
	}
}

// acquire runs acquireSQL in a transaction that commits only if it took
// every key: a rollback gives back the keys that were free.
func (l *Locker) acquire(ctx context.Context, keys []string, owner string) (map[string]int64, error) {
	tokens := make(map[string]int64, len(keys))
	err := pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, acquireSQL, keys, owner, l.opts.TTL)
		var key string
		var fence int64
		_, err := pgx.ForEachRow(rows, []any{&key, &fence}, func() error {
			tokens[key] = fence
			return nil
		})
		if err == nil && len(tokens) < len(keys) {
			err = errHeld
		}
		return err
	})
	return tokens, err
}

// Lock is a held lock. Its watchdog goroutine, which Release stops,
// renews the lease every TTL/3 and closes lost when it cannot.
type Lock struct {
	l      *Locker
	keys   []string
	owner  string // the owner column of every key while this lock holds it
	tokens map[string]int64

	lost     chan struct{} // closed once the lease is lost
	stop     chan struct{} // closed by the first Release: the watchdog returns
	stopOnce sync.Once
	done     chan struct{} // closed when the watchdog has returned

	mu sync.Mutex // guards the fields below
	// validUntil is when the lease runs out by this process's clock,
	// counted from before the statement that took or renewed it: the
	// database counted from a later moment.
	validUntil time.Time
	err        error // nil while held; ErrLost or ErrNotHeld after
}

var _ distlock.Lock = (*Lock)(nil)

func (l *Locker) held(keys []string, owner string, tokens map[string]int64, start time.Time) *Lock {
	lk := &Lock{
		l: l, keys: keys, owner: owner, tokens: tokens,
		lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		validUntil: start.Add(l.opts.TTL),
	}
	go lk.watchdog()
	return lk
}

// watchdog renews the lease every TTL/3 until Release or a loss. Without
// renewal (Options.NoRenewal) it only declares the loss when the lease
// runs out.
func (lk *Lock) watchdog() {
	defer close(lk.done)
	ttl := lk.l.opts.TTL
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-lk.stop:
			return
		case <-tick.C:
		}
		if !lk.l.opts.NoRenewal {
			ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
			err := lk.Refresh(ctx)
			cancel()
			if errors.Is(err, distlock.ErrNotHeld) {
				return // Refresh declared the loss
			}
		}
		lk.mu.Lock()
		expired := time.Now().After(lk.validUntil)
		lk.mu.Unlock()
		if expired {
			lk.markLost()
			return
		}
	}
}

// markLost records the loss of the lease and closes lost, once.
func (lk *Lock) markLost() {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.err == nil {
		lk.err = distlock.ErrLost
		close(lk.lost)
	}
}

// Token returns key's fencing token, or 0 if key is not part of the lock.
func (lk *Lock) Token(key string) int64 { return lk.tokens[key] }

// Lost is closed when the lease is lost while held.
func (lk *Lock) Lost() <-chan struct{} { return lk.lost }

// Err returns nil while held, ErrLost after a loss, ErrNotHeld after a
// Release.
func (lk *Lock) Err() error {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.err
}

// Refresh extends the lease of every key by the TTL, if this lock still
// holds them all; if not, the lease is lost, and the keys it still holds
// stay its own until Release.
func (lk *Lock) Refresh(ctx context.Context) error {
	start := time.Now()
	tag, err := lk.l.db.Exec(ctx, refreshSQL, lk.keys, lk.owner, lk.l.opts.TTL)
	if err != nil {
		return fmt.Errorf("pglock: refresh: %w", err)
	}
	if tag.RowsAffected() != int64(len(lk.keys)) {
		lk.markLost()
		return distlock.ErrNotHeld
	}
	lk.mu.Lock()
	lk.validUntil = start.Add(lk.l.opts.TTL)
	lk.mu.Unlock()
	return nil
}

// Release ends the leases this lock still holds and stops the watchdog.
// It returns ErrNotHeld if the lock was lost or released before, or a key
// was no longer its own.
func (lk *Lock) Release(ctx context.Context) error {
	lk.mu.Lock()
	before := lk.err
	if before == nil {
		lk.err = distlock.ErrNotHeld
	}
	lk.mu.Unlock()
	lk.stopOnce.Do(func() { close(lk.stop) })
	<-lk.done
	tag, err := lk.l.db.Exec(ctx, releaseSQL, lk.keys, lk.owner)
	if err != nil {
		return fmt.Errorf("pglock: release: %w", err)
	}
	if before != nil || tag.RowsAffected() != int64(len(lk.keys)) {
		return distlock.ErrNotHeld
	}
	return nil
}
