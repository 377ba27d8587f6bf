// Package pglock is yours to write: a distributed lock on Postgres, the
// distlock.Locker that the API's strategy lab-pg uses. It keeps its locks
// in a lease table, one row per key (Schema, given): who holds the key
// (owner), until when by the database's clock (expires_at), and the last
// fencing token handed out for it (fence). Fill in the TODOs, then grade
// it (it needs the Postgres of the tests, TEST_DATABASE_URL):
//
//	GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/pglock
//
// The grader is distlock's own conformance suite (distlock/distlocktest),
// the one every backend of the project passes. It runs in stages and stops
// at the first that fails, saying what it asks for:
//
//  1. basics: Obtain waits for a held key and takes several keys all or
//     nothing (one INSERT ... ON CONFLICT (key) DO UPDATE ... WHERE the
//     lease has ended, in a transaction that rolls back unless it took
//     every key); Release frees them.
//  2. ownership: only the owner releases or refreshes (WHERE owner = ...
//     AND the lease has not ended); every holder of a key gets a larger
//     fencing token than the one before (raise fence in the statement that
//     takes the key, and never delete a row).
//  3. leases: a key whose holder vanished frees itself (its expires_at
//     passes); a live holder renews its lease (a goroutine the lock owns,
//     every TTL/3) and closes Lost when it cannot. The grader ends a lease
//     by setting the key's expires_at to '-infinity'.
//
// Two statements that lock several rows in different orders can wait for
// each other: lock rows in key order (ORDER BY key) everywhere.
package pglock

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seatlock/seatlock/distlock"
)

// errTODO is what the parts still to write return.
var errTODO = errors.New("pglock: not written yet (a TODO in docs/workshop/write/pglock)")

// Schema is the lease table; the grader reads and ends leases in it.
// Keep a row once written: its fence must go on growing.
const Schema = `CREATE TABLE IF NOT EXISTS lab_locks (
	key        text PRIMARY KEY,
	owner      text NOT NULL,       -- the holder's random id
	fence      bigint NOT NULL,     -- the last fencing token of key
	expires_at timestamptz NOT NULL -- the lease's end, by the database's clock
)`

// DB is what a Locker needs of Postgres: a *pgxpool.Pool has it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Options configure a Locker. The zero value must work.
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

// Obtain takes every key, all or nothing, trying again until ctx ends:
// then it returns an error that wraps both distlock.ErrNotAcquired and
// ctx.Err() (errors.Join).
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	// TODO: one random owner value per lock. In a transaction
	// (pgx.BeginFunc), one statement that takes every key whose lease
	// has ended, or that has no row yet, for that owner until now() plus
	// the TTL (pgx sends a time.Duration as an interval), raises its
	// fence, and RETURNING key, fence; fewer rows than keys: roll back,
	// wait a little and try again. Then start the lease renewal.
	return nil, errTODO
}

// Lock is a held lock. Its methods must be safe for concurrent use.
type Lock struct {
	// TODO: the locker, the keys, the owner value, the tokens; the Lost
	// channel; what the renewal goroutine needs to be stopped and waited
	// for; the state Err reports, guarded by a mutex.
}

var _ distlock.Lock = (*Lock)(nil)

// Token returns key's fencing token, or 0 if key is not part of the lock.
func (lk *Lock) Token(key string) int64 {
	// TODO
	return 0
}

// Lost is closed when the lease is lost while held (a renewal found a
// lease ended or someone else's, or the lease ran out unrenewed).
func (lk *Lock) Lost() <-chan struct{} {
	// TODO
	return nil
}

// Err returns nil while held, an error wrapping distlock.ErrLost after a
// loss (even after Release), and distlock.ErrNotHeld after a Release of a
// lock that was not lost.
func (lk *Lock) Err() error {
	// TODO
	return errTODO
}

// Refresh extends the lease of every key by the TTL if this lock still
// holds them all (one UPDATE; RowsAffected says how many it held); if
// not, it returns distlock.ErrNotHeld and the lease is lost.
func (lk *Lock) Refresh(ctx context.Context) error {
	// TODO
	return errTODO
}

// Release ends the leases this lock still holds (set expires_at, keep the
// row) and stops the renewal. It returns distlock.ErrNotHeld if the lock
// was lost or released before, or a key was no longer this lock's.
func (lk *Lock) Release(ctx context.Context) error {
	// TODO
	return errTODO
}
