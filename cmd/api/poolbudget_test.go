package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestLockPoolExhaustedIsUnavailable runs an instance on the smallest
// connection budget, DB_MAX_CONNS=2: one connection for the store, one for
// the postgres lock strategy. A booking holds that one lock connection
// through a long payment; a booking of another, free seat then finds no
// connection to lock with. It must answer 503 unavailable with Retry-After
// once the lock wait is over: not 409 seat_busy (nobody holds its seat),
// not 500, and not hang. The holder, which needs the store while it holds
// its lock, must still book: were the pools one, it would wait for a
// connection that only lock holders have.
func TestLockPoolExhaustedIsUnavailable(t *testing.T) {
	const lockWait = 300 * time.Millisecond
	db := testenv.NewDatabase(t)
	inst := startAPI(t, map[string]string{
		"REDIS_URL": testenv.RedisURL(t), "DATABASE_URL": db,
		"DB_MAX_CONNS": "2", "LOCK_WAIT": lockWait.String(),
	})
	// A first booking of the strategy creates its fence table; done here,
	// it cannot race with what the test watches below.
	warm := createScreening(t, inst.url, `{"movie":"Warm-up","rows":1,"seats_per_row":1,"lock":"postgres"}`)
	if r := call(t, "POST", inst.url+"/v1/screenings/"+warm.ID+"/bookings", bookingBody("eve", "A1")); r.status != http.StatusCreated {
		t.Fatalf("warm-up booking: %d %s", r.status, r.body)
	}

	sc := createScreening(t, inst.url, `{"movie":"Rope","rows":1,"seats_per_row":4,"lock":"postgres","payment_delay_ms":2000}`)
	holder := make(chan response, 1)
	go func() {
		holder <- call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("alice", "A1"))
	}()
	waitAdvisoryLocks(t, db, 1)

	start := time.Now()
	r := call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("bob", "A2"))
	took := time.Since(start)
	wantError(t, r, http.StatusServiceUnavailable, "unavailable")
	// A bound on a hang, not a speed test: the answer comes once the lock
	// wait is over, not when the holder is done (2 s) or never.
	if took > lockWait+1500*time.Millisecond {
		t.Errorf("the 503 took %v, over the lock wait of %v", took, lockWait)
	}
	// The store's own pool still serves while the lock pool is used up.
	if _, m := seatsOf(t, inst.url, sc.ID); m["A2"].Status != "free" {
		t.Errorf("A2 is %q after a 503, want free: nothing is booked", m["A2"].Status)
	}

	if h := <-holder; h.status != http.StatusCreated {
		t.Fatalf("the lock holder did not book: %d %s", h.status, h.body)
	}
	if r := call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("bob", "A2")); r.status != http.StatusCreated {
		t.Errorf("booking again once the pool has a connection: %d %s", r.status, r.body)
	}
}

// waitAdvisoryLocks waits until n advisory locks are granted in the
// database at url: a booking of the postgres strategy holds its seats.
func waitAdvisoryLocks(t *testing.T, url string, n int) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var got int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
	}
	t.Fatalf("%d advisory locks granted, want %d", got, n)
}
