package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
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

	sc := createScreening(t, inst.url, `{"movie":"Rope","rows":1,"seats_per_row":4,"lock":"postgres","payment_delay_ms":5000}`)
	holder := make(chan response, 1)
	go func() {
		holder <- call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("alice", "A1"))
	}()
	waitAdvisoryLocks(t, db, 1)

	r := call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("bob", "A2"))
	wantError(t, r, http.StatusServiceUnavailable, "unavailable")
	// The answer comes once the lock wait is over, not once the holder is
	// done: the holder's payment (5 s) has not ended yet.
	select {
	case h := <-holder:
		t.Errorf("the 503 came after the holder's answer (%d): it waited for the holder, not for the lock wait of %v", h.status, lockWait)
		holder <- h
	default:
	}
	// The store's own pool still serves while the lock pool is used up.
	if _, m := seatsOf(t, inst.url, sc.ID); m["A2"].Status != "free" {
		t.Errorf("A2 is %q after a 503, want free: nothing is booked", m["A2"].Status)
	}

	if h := wait.Recv(t, holder, time.Minute, "the lock holder's answer"); h.status != http.StatusCreated {
		t.Fatalf("the lock holder did not book: %d %s", h.status, h.body)
	}
	// Once the holder is done, the lock connection comes back and bob books.
	// On a loaded machine one lock wait (300 ms) may end before the round
	// trips of a free seat's lock: bob is then told to try again, as a
	// client would, until a deadline.
	var last response
	wait.For(t, 30*time.Second, "bob's booking of A2 once the pool has a connection", func() bool {
		last = call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("bob", "A2"))
		return last.status == http.StatusCreated || (last.status != http.StatusConflict && last.status != http.StatusServiceUnavailable)
	})
	if last.status != http.StatusCreated {
		t.Errorf("booking again once the pool has a connection: %d %s", last.status, last.body)
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
	wait.For(t, 10*time.Second, fmt.Sprintf("%d advisory locks granted", n), func() bool {
		var got int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks
WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		return got >= n
	})
}
