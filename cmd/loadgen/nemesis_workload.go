package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// nemesisClient is one client of the nemesis workload: a closed loop of
// bookings (one seat or several), idempotent retries, holds that it
// confirms or releases, cancels of its own bookings, and bookings it gives
// up on, each sent to an instance of its choice.
type nemesisClient struct {
	id     int
	c      *client
	h      *history
	apis   []string // base URLs, api-0 first
	shows  []*screening
	rotate time.Duration // how long the clients stay on one screening
	runID  string
	rng    *rand.Rand
	n      int          // operations so far, for unique customer names
	mine   []ownBooking // confirmed bookings it may cancel
}

// ownBooking is a confirmed booking and the token that cancels it.
type ownBooking struct {
	id, token, screening, customer string
	seats                          []string
}

// bookingAnswer is a 201 (or a repeat's 200) to a booking or a confirm.
type bookingAnswer struct {
	ID    string   `json:"id"`
	Seats []string `json:"seats"`
	Token string   `json:"token"`
}

// run sends operations until ctx ends.
func (nc *nemesisClient) run(ctx context.Context) {
	for ctx.Err() == nil {
		switch p := nc.rng.IntN(100); {
		case p < 35:
			nc.book(ctx, kindBook, 1+nc.rng.IntN(2)*nc.rng.IntN(3))
		case p < 45:
			nc.book(ctx, kindRetry, 1)
		case p < 55:
			nc.book(ctx, kindGiveUp, 1+nc.rng.IntN(2))
		case p < 75:
			nc.hold(ctx)
		default:
			nc.cancel(ctx)
		}
	}
}

// target picks an instance: its name and its base URL.
func (nc *nemesisClient) target() (string, string) {
	i := nc.rng.IntN(len(nc.apis))
	return fmt.Sprintf("api-%d", i), nc.apis[i]
}

// seats picks the screening of the moment and n adjacent seats of it.
func (nc *nemesisClient) seats(n int) (*screening, []string) {
	i := min(int(time.Since(nc.h.start)/nc.rotate), len(nc.shows)-1)
	s := nc.shows[i]
	row, first := nc.rng.IntN(s.Rows), nc.rng.IntN(s.SeatsPerRow-n+1)
	seats := make([]string, n)
	for k := range seats {
		seats[k] = seatID(row*s.SeatsPerRow+first+k, s.SeatsPerRow)
	}
	return s, seats
}

func (nc *nemesisClient) customer() string {
	nc.n++
	return fmt.Sprintf("nem-%s-%d-%d", nc.runID, nc.id, nc.n)
}

// book books n seats: once (book), twice under one key (retry), or with a
// client that hangs up after a few milliseconds (give-up).
func (nc *nemesisClient) book(ctx context.Context, kind string, n int) {
	s, seats := nc.seats(n)
	name, base := nc.target()
	cust := nc.customer()
	r := request{method: http.MethodPost, url: base + "/v1/screenings/" + s.ID + "/bookings",
		body: map[string]any{"seats": seats, "customer": cust}}
	sends := 1
	if kind == kindRetry {
		r.key, sends = cust, 2
	}
	for i := range sends {
		k := kind
		if kind == kindRetry && i == 0 {
			k = kindBook
		}
		rctx, cancel := ctx, context.CancelFunc(func() {})
		if kind == kindGiveUp {
			rctx, cancel = context.WithTimeout(ctx, time.Duration(1+nc.rng.IntN(50))*time.Millisecond)
		}
		op := nc.h.invoke(nc.id, name, k)
		op.Screening, op.Seats, op.Customer, op.Key = s.ID, seats, cust, r.key
		var b bookingAnswer
		a := nc.c.send(rctx, r, &b)
		cancel()
		op.Booking = b.ID
		op = nc.h.complete(op, a, http.StatusCreated)
		if op.Outcome == outcomeOK && b.Token != "" && !nc.owns(b.ID) {
			nc.mine = append(nc.mine, ownBooking{b.ID, b.Token, s.ID, cust, seats})
		}
	}
}

// holdAnswerN is a 201 to a hold.
type holdAnswerN struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// hold holds one or two seats, then confirms the hold (four times in
// five) or releases it, on another instance.
func (nc *nemesisClient) hold(ctx context.Context) {
	s, seats := nc.seats(1 + nc.rng.IntN(2))
	name, base := nc.target()
	cust := nc.customer()
	op := nc.h.invoke(nc.id, name, kindHold)
	op.Screening, op.Seats, op.Customer = s.ID, seats, cust
	var h holdAnswerN
	a := nc.c.send(ctx, request{method: http.MethodPost, url: base + "/v1/screenings/" + s.ID + "/holds",
		body: map[string]any{"seats": seats, "customer": cust}}, &h)
	op.Hold = h.ID
	if op = nc.h.complete(op, a, http.StatusCreated); op.Outcome != outcomeOK {
		return
	}
	name, base = nc.target()
	kind, r, want := kindConfirm, request{method: http.MethodPost, url: base + "/v1/holds/" + h.ID + "/confirm", token: h.Token}, http.StatusCreated
	if nc.rng.IntN(5) == 0 {
		kind, r, want = kindRelease, request{method: http.MethodDelete, url: base + "/v1/holds/" + h.ID, token: h.Token}, http.StatusNoContent
	}
	next := nc.h.invoke(nc.id, name, kind)
	next.Screening, next.Seats, next.Customer, next.Of = s.ID, seats, cust, h.ID
	var b bookingAnswer
	a = nc.c.send(ctx, r, &b)
	next.Booking = b.ID
	if next = nc.h.complete(next, a, want); next.Outcome == outcomeOK && b.Token != "" {
		nc.mine = append(nc.mine, ownBooking{b.ID, b.Token, s.ID, cust, seats})
	}
}

// cancel cancels one of the client's bookings, at random; with none, it
// books instead.
func (nc *nemesisClient) cancel(ctx context.Context) {
	if len(nc.mine) == 0 {
		nc.book(ctx, kindBook, 1)
		return
	}
	i := nc.rng.IntN(len(nc.mine))
	b := nc.mine[i]
	nc.mine = append(nc.mine[:i], nc.mine[i+1:]...)
	name, base := nc.target()
	op := nc.h.invoke(nc.id, name, kindCancel)
	op.Screening, op.Seats, op.Customer, op.Of = b.screening, b.seats, b.customer, b.id
	a := nc.c.send(ctx, request{method: http.MethodDelete, url: base + "/v1/bookings/" + b.id, token: b.token}, nil)
	nc.h.complete(op, a, http.StatusNoContent)
}

// owns reports whether the client already keeps booking id (a retry's
// repeat answers with the first send's booking).
func (nc *nemesisClient) owns(id string) bool {
	return slices.ContainsFunc(nc.mine, func(b ownBooking) bool { return b.id == id })
}
