package main

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// TestRoleConnectionLimit runs an instance as a role whose CONNECTION
// LIMIT (3) is below DB_MAX_CONNS (the default, 16). The store's pool
// keeps what it opens, so sized from DB_MAX_CONNS it could hold all three
// connections, and the postgres lock strategy, on a pool of its own,
// would find none: 503 to each of its bookings while /readyz says 200.
// The pools must share the role's limit instead: /readyz 200, and postgres
// bookings book, one after another and several at once, while the store
// serves reads. The log says the limit was lowered.
func TestRoleConnectionLimit(t *testing.T) {
	admin := testenv.PostgresURL(t)
	role := "seatlock_limited_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	adminExec(t, admin, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 3")
	t.Cleanup(func() { adminExec(t, admin, "DROP ROLE IF EXISTS "+role) }) // after the database is dropped
	db := testenv.NewDatabase(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	adminExec(t, db, "ALTER DATABASE "+strings.TrimPrefix(u.Path, "/")+" OWNER TO "+role)
	adminExec(t, db, "ALTER SCHEMA public OWNER TO "+role)
	u.User = url.User(role)

	inst := startAPI(t, map[string]string{
		"REDIS_URL": testenv.RedisURL(t), "DATABASE_URL": u.String(), "LOCK_WAIT": "10s",
	})
	if r := call(t, "GET", inst.url+"/readyz", ""); r.status != http.StatusOK {
		t.Fatalf("/readyz: %d %s", r.status, r.body)
	}
	if !strings.Contains(inst.logs.String(), "connection_limit=3") {
		t.Errorf("the log does not say the pools share the role's limit of 3:\n%s", inst.logs.Tail(4<<10))
	}
	sc := createScreening(t, inst.url, `{"movie":"Limited","rows":1,"seats_per_row":8,"lock":"postgres"}`)
	for _, seat := range []string{"A1", "A2"} {
		if r := call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("ann", seat)); r.status != http.StatusCreated {
			t.Fatalf("booking %s on a role limited to 3 connections: %d %s", seat, r.status, r.body)
		}
	}
	answers := make(chan response, 4)
	for _, seat := range []string{"A3", "A4", "A5", "A6"} {
		go func() {
			answers <- call(t, "POST", inst.url+"/v1/screenings/"+sc.ID+"/bookings", bookingBody("bob", seat))
		}()
	}
	for range 4 {
		if r := wait.Recv(t, answers, 2*time.Minute, "a concurrent booking's answer"); r.status != http.StatusCreated {
			t.Errorf("concurrent booking: %d %s", r.status, r.body)
		}
	}
	if _, m := seatsOf(t, inst.url, sc.ID); m["A6"].Status != "booked" {
		t.Errorf("A6 is %q, want booked", m["A6"].Status)
	}
}

// adminExec runs one statement as the test's Postgres user, within 30 s.
func adminExec(t *testing.T, dbURL, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect as the test's user: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
