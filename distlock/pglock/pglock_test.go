package pglock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// newPool returns a pool on the database at url, closed when t ends. Every
// Locker of a test gets a pool of its own, as a separate process would.
func newPool(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// terminateHolder ends the session that holds id in the database of
// admin, and waits until it is gone: what an operator's
// pg_terminate_backend, a server restart or a dropped connection does.
func terminateHolder(t testing.TB, admin *pgxpool.Pool, id int64) {
	t.Helper()
	var n int
	err := admin.QueryRow(context.Background(), `
SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND objsubid = 1
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND ((classid::bigint << 32) | objid::bigint) = $1`, id).Scan(&n)
	if err != nil {
		t.Fatalf("terminate the holder of %d: %v", id, err)
	}
	if n != 1 {
		t.Fatalf("terminated %d holders of %d, want 1", n, id)
	}
}

func TestConformance(t *testing.T) {
	const ttl = time.Second
	db := testenv.NewDatabase(t)
	admin := newPool(t, db, 2)
	ids := pglock.New(admin, pglock.Options{}) // only for KeyID
	distlocktest.Run(t, func(t *testing.T) distlock.Locker {
		return pglock.New(newPool(t, db, 8), pglock.Options{TTL: ttl})
	}, distlocktest.Options{
		TTL: ttl,
		// A holder whose watchdog never speaks: the server ends its idle
		// session after the TTL (idle_session_timeout), as it would for
		// a holder that vanished without closing its connection.
		NewNonRenewing: func(t *testing.T) distlock.Locker {
			return pglock.New(newPool(t, db, 8), pglock.Options{TTL: ttl, RenewEvery: -1})
		},
		// There is no lease to delete: a lock ends with its session.
		Expire: func(t *testing.T, key string) {
			terminateHolder(t, admin, ids.KeyID(key))
		},
		Fencing: true,
	})
}

func TestKeyIDMatchesSQL(t *testing.T) {
	pool := newPool(t, testenv.PostgresURL(t), 1)
	for _, tc := range []struct{ namespace, key string }{
		{pglock.DefaultNamespace, "{screening-42}:C7"},
		{pglock.DefaultNamespace, "{0b9c-é-ß}:Z100"},
		{"other:", "{screening-42}:C7"},
		{"x", ""},
	} {
		var fromSQL int64
		err := pool.QueryRow(t.Context(),
			`SELECT ('x' || left(encode(sha256(convert_to($1 || $2, 'UTF8')), 'hex'), 16))::bit(64)::bigint`,
			tc.namespace, tc.key).Scan(&fromSQL)
		if err != nil {
			t.Fatal(err)
		}
		l := pglock.New(pool, pglock.Options{Namespace: tc.namespace})
		if got := l.KeyID(tc.key); got != fromSQL {
			t.Errorf("KeyID(%q, %q) = %d, SQL says %d", tc.namespace, tc.key, got, fromSQL)
		}
	}
}

// orderedKeys returns two fresh keys, the first with the lower lock id:
// the one a waiter takes first.
func orderedKeys(l *pglock.Locker) (low, high string) {
	a, b := "{"+uuid.NewString()+"}:A1", "{"+uuid.NewString()+"}:A2"
	if l.KeyID(a) > l.KeyID(b) {
		a, b = b, a
	}
	return a, b
}

// A waiter for two keys holds the first while it waits for the second.
// When its context ends, the server must stop waiting at once and free the
// first: a server process whose client merely hung up would go on waiting,
// holding it.
func TestCancelledWaitFreesTheKeysTaken(t *testing.T) {
	db := testenv.NewDatabase(t)
	holder := pglock.New(newPool(t, db, 2), pglock.Options{})
	waiter := pglock.New(newPool(t, db, 2), pglock.Options{})
	low, high := orderedKeys(holder)

	held, err := holder.Obtain(t.Context(), high)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release(context.Background()) })

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := waiter.Obtain(ctx, low, high); !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain(%q, %q) = %v, want ErrNotAcquired and DeadlineExceeded", low, high, err)
	}
	// The waiter's session is closed when Obtain returns; the server frees
	// its keys as that session ends, a moment later on a busy machine. A
	// server still waiting for high would keep low held for as long as
	// holder holds high: for the whole test.
	var lock distlock.Lock
	wait.For(t, 10*time.Second, fmt.Sprintf("%q free after the cancelled wait", low), func() bool {
		lock, err = holder.TryObtain(t.Context(), low)
		return err == nil
	})
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestTryObtainAllOrNothing(t *testing.T) {
	db := testenv.NewDatabase(t)
	a := pglock.New(newPool(t, db, 2), pglock.Options{})
	pool := newPool(t, db, 1) // one connection: the same one is reused
	b := pglock.New(pool, pglock.Options{})
	low, high := orderedKeys(a)

	held, err := a.TryObtain(t.Context(), high)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryObtain(t.Context(), low, high); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("TryObtain of a held set = %v, want ErrNotAcquired", err)
	}
	// The connection went back to the pool holding nothing: its session
	// is the one b uses next, and a sees low free.
	assertSessionHoldsNoLocks(t, pool)
	lock, err := a.TryObtain(t.Context(), low)
	if err != nil {
		t.Fatalf("TryObtain(%q) after a refused set: %v", low, err)
	}
	_ = lock.Release(t.Context())
	_ = held.Release(t.Context())

	all, err := b.TryObtain(t.Context(), low, high)
	if err != nil {
		t.Fatal(err)
	}
	if all.Token(low) <= 0 || all.Token(high) <= 0 {
		t.Fatalf("tokens %d, %d, want fencing tokens", all.Token(low), all.Token(high))
	}
	if err := all.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	assertSessionHoldsNoLocks(t, pool)
}

// assertSessionHoldsNoLocks checks that the idle connection of a
// one-connection pool holds no advisory lock and has its lease reset:
// a pooled connection must never carry a lock to its next user.
func assertSessionHoldsNoLocks(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var n int
	var timeout string
	err := pool.QueryRow(t.Context(), `SELECT
  (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
  current_setting('idle_session_timeout')`).Scan(&n, &timeout)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || timeout != "0" {
		t.Fatalf("pooled session holds %d advisory locks, idle_session_timeout %s; want 0 and 0", n, timeout)
	}
}

func TestReleasedConnectionIsPooledClean(t *testing.T) {
	pool := newPool(t, testenv.NewDatabase(t), 1)
	l := pglock.New(pool, pglock.Options{})
	lock, err := l.Obtain(t.Context(), "{"+uuid.NewString()+"}:B2", "{"+uuid.NewString()+"}:B3")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := pool.Stat().TotalConns(); got != 1 {
		t.Fatalf("pool has %d connections after Release, want the 1 it lent", got)
	}
	assertSessionHoldsNoLocks(t, pool)
}

func TestSessionEndIsReportedAsLoss(t *testing.T) {
	db := testenv.NewDatabase(t)
	admin := newPool(t, db, 1)
	l := pglock.New(newPool(t, db, 2), pglock.Options{TTL: time.Second})
	key := "{" + uuid.NewString() + "}:C7"
	lock, err := l.Obtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	terminateHolder(t, admin, l.KeyID(key))
	select {
	case <-lock.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed within 5s of the session's end")
	}
	if err := lock.Err(); !errors.Is(err, distlock.ErrLost) {
		t.Fatalf("Err = %v, want ErrLost", err)
	}
	if err := lock.Release(t.Context()); !errors.Is(err, distlock.ErrNotHeld) {
		t.Fatalf("Release = %v, want ErrNotHeld", err)
	}
	// The key is free: the server released it with the session.
	again, err := l.TryObtain(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Release(t.Context())
}

func TestBackendDownIsNotErrNotAcquired(t *testing.T) {
	// A port nobody listens on: connecting fails at once.
	pool := newPool(t, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", 1)
	_, err := pglock.New(pool, pglock.Options{}).Obtain(t.Context(), "{x}:A1")
	if err == nil || errors.Is(err, distlock.ErrNotAcquired) {
		t.Fatalf("Obtain with Postgres down = %v, want a backend error that is not ErrNotAcquired", err)
	}
}

// TestPoolExhaustedIsNotABusyKey: with the pool's only connection lent
// to a held lock, obtaining another, free key runs out of its deadline
// waiting for a connection. That must read as an overload
// (ErrPoolExhausted), not as a held key (ErrNotAcquired) nor as a plain
// deadline, which callers turn into "someone else has the seat". A
// cancelled (not expired) wait stays ErrNotAcquired: the caller gave up.
func TestPoolExhaustedIsNotABusyKey(t *testing.T) {
	locker := pglock.New(newPool(t, testenv.NewDatabase(t), 1), pglock.Options{})
	held, err := locker.Obtain(t.Context(), "{x}:A1")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.Background())

	for name, obtain := range map[string]func(context.Context, ...string) (distlock.Lock, error){
		"Obtain": locker.Obtain, "TryObtain": locker.TryObtain,
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		_, err = obtain(ctx, "{x}:B1")
		cancel()
		if !errors.Is(err, pglock.ErrPoolExhausted) || errors.Is(err, distlock.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s of a free key with the pool used up = %v, want ErrPoolExhausted alone", name, err)
		}
	}

	cctx, stop := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, stop)
	if _, err := locker.Obtain(cctx, "{x}:B1"); !errors.Is(err, distlock.ErrNotAcquired) {
		t.Errorf("Obtain cancelled while waiting for a connection = %v, want ErrNotAcquired", err)
	}
}

// beginTx begins a transaction that is rolled back when t ends, unless it
// was committed or rolled back before.
func beginTx(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// waitForAdvisoryLock waits until the backend pid waits for an advisory
// lock.
func waitForAdvisoryLock(t *testing.T, pool *pgxpool.Pool, pid uint32) {
	t.Helper()
	wait.For(t, 10*time.Second, "the second transaction waits for the key", func() bool {
		var waiting bool
		err := pool.QueryRow(t.Context(),
			`SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid = $1)`, pid).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		return waiting
	})
}

func TestXactLock(t *testing.T) {
	pool := newPool(t, testenv.NewDatabase(t), 4)
	key := "{" + uuid.NewString() + "}:D4"

	assertBusy := func(t *testing.T) {
		t.Helper()
		tx := beginTx(t, pool)
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		err := pglock.XactLock(ctx, tx, key)
		if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("XactLock while held = %v, want ErrNotAcquired and DeadlineExceeded", err)
		}
		if err := tx.Rollback(t.Context()); err != nil {
			t.Fatalf("rollback after a cancelled wait: %v (the connection should survive)", err)
		}
	}

	for _, end := range []string{"commit", "rollback"} {
		t.Run("ReleasedAt"+strings.ToUpper(end[:1])+end[1:], func(t *testing.T) {
			first := beginTx(t, pool)
			if err := pglock.XactLock(t.Context(), first, key, key); err != nil {
				t.Fatal(err)
			}
			assertBusy(t)

			// A waiter with no deadline gets the key when first ends.
			second := beginTx(t, pool)
			var ended time.Time
			got := make(chan error, 1)
			go func() { got <- pglock.XactLock(t.Context(), second, key) }()
			waitForAdvisoryLock(t, pool, second.Conn().PgConn().PID())
			select {
			case err := <-got:
				t.Fatalf("second transaction got the key while the first holds it (err %v)", err)
			default:
			}
			ended = time.Now()
			var err error
			if end == "commit" {
				err = first.Commit(t.Context())
			} else {
				err = first.Rollback(t.Context())
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("handed over %v after the %s", time.Since(ended), end)
			case <-time.After(5 * time.Second):
				t.Fatalf("second transaction not granted within 5s of the %s", end)
			}
			if err := second.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("ExcludesSessionLocks", func(t *testing.T) {
		locker := pglock.New(pool, pglock.Options{}) // DefaultNamespace, as XactLock
		tx := beginTx(t, pool)
		if err := pglock.XactLock(t.Context(), tx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := locker.TryObtain(t.Context(), key); !errors.Is(err, distlock.ErrNotAcquired) {
			t.Fatalf("TryObtain while a transaction holds the key = %v, want ErrNotAcquired", err)
		}
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		lock, err := locker.TryObtain(t.Context(), key)
		if err != nil {
			t.Fatalf("TryObtain after the commit: %v", err)
		}
		_ = lock.Release(t.Context())
	})
}
