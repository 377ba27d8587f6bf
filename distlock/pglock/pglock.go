package pglock

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
	"github.com/seatlock/seatlock/distlock/internal/watchdog"
)

var _ distlock.Locker = (*Locker)(nil)

// DefaultNamespace is the namespace of a Locker whose Options leave it
// empty, and the one XactLock uses, so that a session lock and a
// transaction lock on the same key exclude each other.
const DefaultNamespace = "seatlock:"

// FenceTableDDL creates the table of fencing tokens. A Locker runs it
// (serialised by a transaction advisory lock) before its first Obtain;
// apply it in a migration instead where the locker's role may not create
// tables.
const FenceTableDDL = `CREATE TABLE IF NOT EXISTS distlock_fences (
	key   text PRIMARY KEY,
	token bigint NOT NULL
)`

// The statements of the protocol. Each Obtain, TryObtain and Release is one
// round trip: the statements of one step go in one pgx.Batch.
const (
	// setLeaseSQL makes the server end the session once it has been idle
	// (no statement from the holder) for the TTL: the lease.
	setLeaseSQL = `SELECT set_config('idle_session_timeout', $1, false)`
	// resetLeaseSQL puts the session's setting back before the connection
	// goes back to the pool.
	resetLeaseSQL = `RESET idle_session_timeout`

	// lockSQL waits for one key; a batch of them takes the keys one by one
	// in the order queued.
	lockSQL = `SELECT pg_advisory_lock($1)`

	// fenceSQL issues the next fencing token of every key. It runs only
	// while the keys are held, so the tokens of a key strictly increase.
	fenceSQL = `INSERT INTO distlock_fences AS f (key, token)
SELECT k, 1 FROM unnest($1::text[]) AS k
ON CONFLICT (key) DO UPDATE SET token = f.token + 1
RETURNING key, token`

	// tryLockSQL tries every key (bool_and calls the function for every
	// row: there is no short cut) and issues fencing tokens only if all
	// were free. No row back means some key was held; the keys that were
	// free are then held too, and unlockAllSQL gives them back.
	tryLockSQL = `WITH tried AS (
	SELECT bool_and(pg_try_advisory_lock(id)) AS ok FROM unnest($1::bigint[]) AS id
)
INSERT INTO distlock_fences AS f (key, token)
SELECT k, 1 FROM unnest($2::text[]) AS k, tried WHERE tried.ok
ON CONFLICT (key) DO UPDATE SET token = f.token + 1
RETURNING key, token`
	unlockAllSQL = `SELECT pg_advisory_unlock_all()`

	// unlockSQL releases every key and counts those this session held.
	unlockSQL = `SELECT count(*) FILTER (WHERE pg_advisory_unlock(id)) FROM unnest($1::bigint[]) AS id`

	// heldSQL counts the keys this session holds, as the server sees them.
	// pg_locks shows a bigint advisory key as its high half in classid and
	// its low half in objid, with objsubid 1.
	heldSQL = `SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted AND objsubid = 1
  AND ((classid::bigint << 32) | objid::bigint) = ANY($1::bigint[])`
)

// ErrPoolExhausted is returned by Obtain and TryObtain when the context's
// deadline passed while every connection of the pool was lent to other
// locks, held or waiting: the lock service is overloaded, and no key was
// even tried. It is deliberately not distlock.ErrNotAcquired, which means
// that a key is held by someone else, and it wraps no context error, so that
// a caller that maps a deadline to "busy" does not take it for one.
var ErrPoolExhausted = errors.New("pglock: no pool connection came free before the deadline")

// cancelGrace is how long a wait that its context ended gives the server
// to act on the cancel request, before the connection is cut instead.
const cancelGrace = 2 * time.Second

// Options tunes a Locker. The zero value works.
type Options struct {
	// TTL is the lease of a lock: the server ends the session of a holder
	// that has sent nothing for this long (Postgres' idle_session_timeout,
	// so Postgres 14 or later), which frees its keys. It bounds how long
	// a holder that vanished without closing its connection (a machine
	// that lost power, a network partition) blocks its keys. Default 10s.
	// A negative TTL sets no lease: a lock then lasts as long as its
	// session, which the server ends only when TCP notices a dead peer.
	TTL time.Duration

	// RenewEvery is how often a lock's watchdog asks the server whether
	// the session still holds the keys, which also keeps the session from
	// going idle. Default TTL/3, or 3s without a TTL; a negative value
	// disables the watchdog. It must be below TTL minus the drift
	// allowance (TTL/100) and StopMargin.
	RenewEvery time.Duration

	// StopMargin is how long before the server could end the session
	// (its idle timeout) a lock is declared lost, so that its holder has
	// that long to stop what it does under the lock before another
	// session may take the keys: set it to the longest the holder takes
	// to stop once Lost is closed. Default 0: the loss is declared only
	// the drift allowance (TTL/100) before. With the drift allowance it
	// must leave more than half the TTL. Without a TTL it is unused.
	StopMargin time.Duration

	// Namespace is prepended to every key before it is hashed to an
	// advisory lock id and stored in the fence table, so that several
	// applications can share a database. Default DefaultNamespace.
	Namespace string
}

// Locker is a distlock.Locker on Postgres session advisory locks. Every
// lock has a connection of its own from the pool for as long as it is
// held (or waited for), so size the pool for the locks held and waited
// for at once, and give the Locker a pool of its own: a pool shared with
// the store can be emptied by waiters.
//
// A Locker is safe for concurrent use. Its one goroutine, the watchdog's,
// runs only while it holds a lock, so it needs no Close.
type Locker struct {
	pool  *pgxpool.Pool
	opts  Options         // with defaults applied
	lease lockstate.Lease // how a holder counts opts.TTL; unused without a TTL

	watchdog *watchdog.Watchdog // renews and expires the held locks

	// tableReady is set once FenceTableDDL succeeded. Two first Obtains
	// may both run it, which is harmless: it is idempotent, and
	// serialised on the server.
	tableReady atomic.Bool
}

// New returns a Locker that takes its connections from pool. It does no
// I/O: the fence table is created before the first Obtain. It panics if
// opts are inconsistent (a StopMargin that leaves half the TTL or less,
// RenewEvery not below what it leaves): a programming error.
func New(pool *pgxpool.Pool, opts Options) *Locker {
	if opts.TTL == 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.TTL > 0 && opts.TTL < time.Millisecond {
		panic(fmt.Sprintf("pglock: TTL %v is below 1ms", opts.TTL))
	}
	if opts.RenewEvery == 0 {
		opts.RenewEvery = 3 * time.Second
		if opts.TTL > 0 {
			opts.RenewEvery = opts.TTL / 3
		}
	}
	lease := lockstate.Lease{TTL: opts.TTL, Drift: opts.TTL / 100, StopMargin: opts.StopMargin}
	if opts.TTL > 0 {
		if err := lease.Check(opts.RenewEvery); err != nil {
			panic("pglock: " + err.Error())
		}
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	return &Locker{pool: pool, opts: opts, lease: lease, watchdog: watchdog.New(watchdog.Options{Every: opts.RenewEvery})}
}

// KeyID returns the advisory lock id of key: the first 8 bytes of the
// SHA-256 of the namespace followed by key, read as a big-endian signed
// 64-bit integer. It is stable across processes, versions and languages;
// in SQL it is
//
//	('x' || left(encode(sha256(convert_to(namespace || key, 'UTF8')), 'hex'), 16))::bit(64)::bigint
//
// Use it to find a holder in pg_locks. Two keys share an id with
// probability 2^-64 per pair; among n keys held at once the odds of any
// collision are about n²/2^65 (1 in 37 million for a million keys), and a
// collision only makes two seats wait for each other, never lets two
// holders in.
func (l *Locker) KeyID(key string) int64 { return keyID(l.opts.Namespace, key) }

func keyID(namespace, key string) int64 {
	sum := sha256.Sum256([]byte(namespace + key))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// Obtain takes every key, all or nothing, waiting until the keys are free
// or ctx ends; the TTL never limits the wait. Duplicate keys are taken
// once.
//
// It is one round trip on a connection of its own: pg_advisory_lock on
// every key in the order of their ids, then the fencing tokens. A waiter
// sleeps in the server and wakes the moment the holder releases. It holds
// the keys before the busy one while it waits; every caller takes keys in
// the same order, so no two waiters can wait for each other.
//
// When ctx ends first, a cancel request stops the wait on the server, the
// connection is closed (the server frees what it took as it ends the
// session, a moment after Obtain returns) and the error is
// errors.Join(distlock.ErrNotAcquired, ctx.Err()); but when ctx's deadline
// passed before the pool lent a connection, it is ErrPoolExhausted. An
// error from Postgres (it cannot be reached, the fence table cannot be
// created) is returned wrapped, and is not ErrNotAcquired.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, conn, b, err := l.start(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, id := range ks.ids {
		b.Queue(lockSQL, id)
	}
	b.Queue(fenceSQL, ks.names)
	var fences []int64
	sent := time.Now()
	err = waitCancelable(ctx, conn.Conn().PgConn(), func(qctx context.Context) error {
		var err error
		fences, err = runBatch(qctx, conn, b, ks)
		return err
	})
	if err != nil || ctx.Err() != nil {
		// A context that ended while we waited may have sent a cancel
		// request that is still on its way; it could hit whatever the
		// connection runs next, so the connection is not reused.
		discard(conn)
		if ctx.Err() != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
		return nil, fmt.Errorf("pglock: obtain %q: %w", ks.keys, err)
	}
	return newLock(l, conn, ks, fences, sent), nil
}

// TryObtain takes every key, all or nothing, without waiting, in one round
// trip. It returns an error wrapping distlock.ErrNotAcquired at once when a
// key is held, or an error from Postgres, wrapped.
func (l *Locker) TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	ks, conn, b, err := l.start(ctx, keys)
	if err != nil {
		return nil, err
	}
	b.Queue(tryLockSQL, ks.ids, ks.names)
	sent := time.Now()
	fences, err := runBatch(ctx, conn, b, ks)
	switch {
	case err == nil:
		return newLock(l, conn, ks, fences, sent), nil
	case errors.Is(err, errSomeHeld):
		// Give back the keys that were free, and the connection.
		b := &pgx.Batch{}
		b.Queue(unlockAllSQL)
		b.Queue(resetLeaseSQL)
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			discard(conn)
		} else {
			conn.Release()
		}
		return nil, fmt.Errorf("%w: a key of %q is held", distlock.ErrNotAcquired, ks.keys)
	default:
		discard(conn)
		if ctx.Err() != nil {
			return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
		}
		return nil, fmt.Errorf("pglock: try obtain %q: %w", ks.keys, err)
	}
}

// start checks keys, borrows a connection for the lock's session and
// begins the batch that takes them, with the session's lease settings
// first: the steps Obtain and TryObtain share.
func (l *Locker) start(ctx context.Context, keys []string) (*keySet, *pgxpool.Conn, *pgx.Batch, error) {
	ks, err := l.keySet(keys)
	if err != nil {
		return nil, nil, nil, err
	}
	conn, err := l.begin(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	b := &pgx.Batch{}
	l.queueLease(b)
	return ks, conn, b, nil
}

// begin makes sure the fence table exists and takes a connection from the
// pool for one lock. Waiting for a free connection takes from the caller's
// wait, but running out of it there is ErrPoolExhausted, not
// ErrNotAcquired: no key was tried.
func (l *Locker) begin(ctx context.Context) (*pgxpool.Conn, error) {
	if !l.tableReady.Load() {
		err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
			// CREATE TABLE IF NOT EXISTS is not safe against itself run
			// concurrently: two sessions can both find no table.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", keyID(l.opts.Namespace, "pglock: create fence table")); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, FenceTableDDL)
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
			}
			return nil, fmt.Errorf("pglock: create the fence table: %w", err)
		}
		l.tableReady.Store(true)
	}
	conn, err := l.pool.Acquire(ctx)
	switch {
	case err == nil:
		return conn, nil
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The wait ran out before a connection did: every one of the
		// pool's is held, or waited with, by other locks. That is an
		// overloaded lock service, not a busy key, and the caller must be
		// able to tell: it answers "try later", not "someone has it".
		return nil, fmt.Errorf("%w: all %d connections hold or wait for other locks", ErrPoolExhausted, l.pool.Config().MaxConns)
	case ctx.Err() != nil:
		return nil, errors.Join(distlock.ErrNotAcquired, ctx.Err())
	default:
		return nil, fmt.Errorf("pglock: connect: %w", err)
	}
}

// queueLease queues the statement that sets the session's lease, if any.
func (l *Locker) queueLease(b *pgx.Batch) {
	if l.opts.TTL > 0 {
		b.Queue(setLeaseSQL, strconv.FormatInt(l.opts.TTL.Milliseconds(), 10))
	}
}

// errSomeHeld is what runBatch returns when tryLockSQL found a key held.
var errSomeHeld = errors.New("pglock: a key is held")

// runBatch sends b, whose last statement returns (key, token) rows, and
// returns the tokens in the order of ks.keys. No rows is errSomeHeld.
func runBatch(ctx context.Context, conn *pgxpool.Conn, b *pgx.Batch, ks *keySet) ([]int64, error) {
	br := conn.SendBatch(ctx, b)
	for range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	rows, _ := br.Query()
	tokens := map[string]int64{}
	var name string
	var token int64
	_, err := pgx.ForEachRow(rows, []any{&name, &token}, func() error {
		tokens[name] = token
		return nil
	})
	if err := errors.Join(err, br.Close()); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, errSomeHeld
	}
	fences := make([]int64, len(ks.keys))
	for i, n := range ks.names {
		if fences[i] = tokens[n]; fences[i] == 0 {
			return nil, fmt.Errorf("no fencing token for %q", ks.keys[i])
		}
	}
	return fences, nil
}

// waitCancelable runs f, which may wait in the server for as long as it
// likes, with a context that ctx's end does not cancel: pgx's default
// reaction to a cancelled context is to cut the connection, and a server
// process waiting for a lock does not notice a cut connection, so it would
// go on waiting, and holding the keys it took before, until it is granted
// the busy one. Instead, when ctx ends, a cancel request makes the server
// stop the wait at once. Should the server not answer within cancelGrace,
// f's context is cancelled after all.
//
// The goroutine that watches ctx is owned here: waitCancelable returns
// only after it ended.
func waitCancelable(ctx context.Context, conn *pgconn.PgConn, f func(qctx context.Context) error) error {
	qctx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		grace, cancel := context.WithTimeout(qctx, cancelGrace)
		defer cancel()
		_ = conn.CancelRequest(grace) // no answer: the grace runs out
		select {
		case <-finished:
		case <-grace.Done():
			abort()
		}
	})
	err := f(qctx)
	close(finished)
	wg.Wait()
	return err
}

// discard closes a connection whose state is in doubt (it may hold keys,
// or a cancel request may still reach it) and lets the pool forget it.
// Closing the session frees every advisory lock it held.
func discard(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
	conn.Release() // a closed connection is destroyed, not pooled
}

// keySet is the caller's keys and what the database knows them by.
type keySet struct {
	keys  []string // the caller's keys, without duplicates, in order
	names []string // names[i] is the namespaced keys[i], the fence table's key
	ids   []int64  // the distinct advisory lock ids, ascending: the lock order
}

func (l *Locker) keySet(keys []string) (*keySet, error) {
	return newKeySet(l.opts.Namespace, keys)
}

func newKeySet(namespace string, keys []string) (*keySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("pglock: Obtain needs at least one key")
	}
	ks := &keySet{}
	for _, k := range keys {
		if slices.Contains(ks.keys, k) {
			continue
		}
		ks.keys = append(ks.keys, k)
		ks.names = append(ks.names, namespace+k)
		// Two keys with one id (see KeyID) are one lock: taking it twice
		// would need two unlocks.
		if id := keyID(namespace, k); !slices.Contains(ks.ids, id) {
			ks.ids = append(ks.ids, id)
		}
	}
	slices.SortFunc(ks.ids, cmp.Compare[int64])
	return ks, nil
}
