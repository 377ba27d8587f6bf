package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestPostgresXact races bookings of one seat across two instances on one
// database under lock=postgres-xact. The write guard is off, so only the
// transaction locks keep the seat from being sold twice: exactly one
// booking is confirmed, every other one is told the seat is taken.
func TestPostgresXact(t *testing.T) {
	insts := startCluster(t, 2)
	sc := createScreening(t, insts[0].url,
		`{"movie":"Vertigo","rows":2,"seats_per_row":4,"lock":"postgres-xact","guard":"off","payment_delay_ms":20}`)
	if sc.Lock != "postgres-xact" {
		t.Fatalf("screening lock %q, want postgres-xact", sc.Lock)
	}
	out := race(t, insts, sc.ID, sameSeat(10, "B2"))
	won := confirmed(out)
	if len(won) != 1 {
		t.Fatalf("%d bookings of B2 confirmed, want 1: %+v", len(won), out)
	}
	for _, o := range out {
		if o.status != http.StatusCreated && o.code != "seat_taken" {
			t.Errorf("answer %d %q, want 201 or 409 seat_taken", o.status, o.code)
		}
	}
	_, m := seatsOf(t, insts[1].url, sc.ID)
	if m["B2"].BookingID != won[0].ID {
		t.Errorf("B2 is held by %q, want %s", m["B2"].BookingID, won[0].ID)
	}
}

// TestPostgresXactNeedsPostgres: the in-memory store cannot take a lock in
// a transaction, so a screening that asks for postgres-xact is a 400 that
// says what is offered.
func TestPostgresXactNeedsPostgres(t *testing.T) {
	inst := startAPI(t, map[string]string{})
	r := call(t, "POST", inst.url+"/v1/screenings", `{"movie":"M","rows":1,"seats_per_row":1,"lock":"postgres-xact"}`)
	e := wantError(t, r, http.StatusBadRequest, "invalid_request")
	if !strings.Contains(e.Error.Message, "offered: ") || strings.Contains(e.Error.Message, "offered: postgres-xact") {
		t.Errorf("message %q should list what is offered, without postgres-xact", e.Error.Message)
	}
}
