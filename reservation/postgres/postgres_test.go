package postgres_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/migrations"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
	"github.com/seatlock/seatlock/reservation/storetest"
)

// TestStore runs the shared suite against the plain store and against
// group commit in front of it. Every subtest gets the same store over one
// fresh database: the suite uses screenings of its own in each subtest.
func TestStore(t *testing.T) {
	url := testenv.NewDatabase(t)
	t.Run("plain", func(t *testing.T) {
		store := open(t, url)
		storetest.Run(t, func(t *testing.T) reservation.Store { return store })
	})
	t.Run("group commit", func(t *testing.T) {
		store := openGrouped(t, url)
		storetest.Run(t, func(t *testing.T) reservation.Store { return store })
	})
}

func TestMigrateConcurrently(t *testing.T) {
	url := testenv.NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// Three instances starting together: a pool each, released at once.
	const instances = 3
	pools := make([]*pgxpool.Pool, instances)
	for i := range pools {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		pools[i] = pool
	}
	errs := make([]error, instances)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, pool := range pools {
		wg.Go(func() {
			<-start
			errs[i] = postgres.Migrate(ctx, pool)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: Migrate: %v", i, err)
		}
	}

	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	var recorded, distinct int
	err = pools[0].QueryRow(ctx, `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&recorded, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if recorded != len(files) || distinct != len(files) {
		t.Errorf("schema_migrations holds %d rows (%d versions), want %d files once each", recorded, distinct, len(files))
	}

	// Once migrated, a store opens on the database and works.
	store, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatalf("Open on a migrated database: %v", err)
	}
	defer store.Close()
	if err := store.CreateScreening(ctx, reservation.Screening{ID: "after-migrate", Movie: "M", StartsAt: time.Now(),
		Rows: 1, SeatsPerRow: 1, Lock: reservation.LockRedis, Guard: reservation.GuardFence}); err != nil {
		t.Fatalf("CreateScreening: %v", err)
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	const url = "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=5"
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()

	if _, err := postgres.Open(ctx, url, postgres.Options{}); !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Open: %v, want ErrUnavailable", err)
	}

	// A pool connects lazily, so a store over one can be had while the
	// server is down; every call then fails.
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.New(pool)
	defer store.Close()
	if err := store.Ping(ctx); !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Ping: %v, want ErrUnavailable", err)
	}
	w := reservation.Write{
		Booking: reservation.Booking{ID: uuid.NewString(), ScreeningID: "s", Seats: []string{"A1"}, Customer: "c"},
		Guard:   reservation.GuardFence,
	}
	if err := store.Book(ctx, w); !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Book: %v, want ErrUnavailable", err)
	}
	if _, err := store.Screenings(ctx, "", 10); !errors.Is(err, reservation.ErrUnavailable) {
		t.Errorf("Screenings: %v, want ErrUnavailable", err)
	}
}

// TestErrorsCarryNoSQL checks that the errors a client may end up seeing
// say what went wrong in the domain's words, without SQL or constraint
// names.
func TestErrorsCarryNoSQL(t *testing.T) {
	store := open(t, testenv.NewDatabase(t))
	ctx := t.Context()
	sc := reservation.Screening{ID: "dup", Movie: "M", StartsAt: time.Now(), Rows: 1, SeatsPerRow: 2,
		Lock: reservation.LockRedis, Guard: reservation.GuardFence}
	if err := store.CreateScreening(ctx, sc); err != nil {
		t.Fatal(err)
	}
	key := []byte("key-hash")
	book := func(seat string) error {
		return store.Book(ctx, reservation.Write{
			Booking:     reservation.Booking{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: []string{seat}, Customer: "c"},
			TokenHash:   []byte("token-hash"),
			Guard:       reservation.GuardFence,
			Idempotency: &reservation.IdempotencyRecord{KeyHash: key, RequestHash: []byte("r"), SealedToken: []byte("s")},
		})
	}
	if err := book("A1"); err != nil {
		t.Fatal(err)
	}
	_, _, missing := store.Booking(ctx, uuid.NewString())
	errs := []error{store.CreateScreening(ctx, sc), book("A2"), missing}
	errs = append(errs, func() error { _, err := store.Screening(ctx, "nope"); return err }())
	for _, err := range errs {
		if err == nil {
			t.Fatal("want an error")
		}
		msg := strings.ToLower(err.Error())
		for _, word := range []string{"select", "insert", "constraint", "sqlstate", "bookings", "screenings_pkey"} {
			if strings.Contains(msg, word) {
				t.Errorf("error %q mentions %q", err, word)
			}
		}
	}
}

// open opens a store on url, closed when t ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	store, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(store.Close)
	return store
}

// openGrouped opens a store on url with group commit in front, closed
// when t ends.
func openGrouped(t testing.TB, url string) *postgres.GroupCommit {
	t.Helper()
	grouped := postgres.NewGroupCommit(open(t, url))
	t.Cleanup(grouped.Close) // before open's Close of the pool: it waits for the batches
	return grouped
}
