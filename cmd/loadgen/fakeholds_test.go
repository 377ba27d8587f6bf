package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The fake API's best available and holds: enough of docs/api.md for the
// best and hold scenarios, with the simplest rules that keep them right
// (every decision under f.mu).

// fakeHold is a hold of the fake API.
type fakeHold struct {
	holdAnswer
	screening   string
	customer    string
	confirmed   *booking
	confirmedAt time.Time // when confirmed was made
}

// heldLocked reports whether a live hold covers seat. The caller holds
// f.mu.
func (f *fakeAPI) heldLocked(screening, seat string) bool {
	for _, h := range f.holds {
		if h.screening == screening && h.confirmed == nil && time.Now().Before(h.ExpiresAt) && slices.Contains(h.Seats, seat) {
			return true
		}
	}
	return false
}

// bestLocked returns n side-by-side seats that are neither booked nor
// held, or nil: row by row, the first block that leaves no seat alone
// (docs/api.md), else the first block; with strandSeats, the first that
// leaves one alone, else the first. The caller holds f.mu.
func (f *fakeAPI) bestLocked(s *fakeScreening, n int) []string {
	taken := func(row, k int) bool {
		if k < 0 || k >= s.SeatsPerRow {
			return true
		}
		seat := seatID(row*s.SeatsPerRow+k, s.SeatsPerRow)
		return s.seats[seat] != "" || f.heldLocked(s.ID, seat)
	}
	// alone reports whether seat k of the row is free with both
	// neighbours taken once the block from first is.
	alone := func(row, k, first int) bool {
		in := func(j int) bool { return j >= first && j < first+n || taken(row, j) }
		return !in(k) && in(k-1) && in(k+1)
	}
	var fallback []string
	for row := range s.Rows {
		for first := 0; first+n <= s.SeatsPerRow; first++ {
			var block []string
			for k := first; k < first+n && !taken(row, k); k++ {
				block = append(block, seatID(row*s.SeatsPerRow+k, s.SeatsPerRow))
			}
			if len(block) < n {
				continue
			}
			if fallback == nil {
				fallback = block
			}
			if strands := alone(row, first-1, first) || alone(row, first+n, first); strands == f.strandSeats {
				return block
			}
		}
	}
	return fallback
}

// bookBest books the best n seats of screening id, or answers sold_out.
func (f *fakeAPI) bookBest(ctx context.Context, w http.ResponseWriter, id string, n int, customer string) {
	f.mu.Lock()
	s, ok := f.screeningLocked(w, id)
	if !ok {
		f.mu.Unlock()
		return
	}
	seats := f.bestLocked(s, n)
	if seats == nil {
		f.mu.Unlock()
		writeError(w, http.StatusConflict, "sold_out", nil)
		return
	}
	b, err := f.writeLocked(ctx, s, seats, customer)
	f.calls++
	calls := f.calls
	f.mu.Unlock()
	if err != nil || (f.failAfterBooking > 0 && calls%f.failAfterBooking == 0) {
		writeError(w, http.StatusServiceUnavailable, "unavailable", nil)
		return
	}
	writeJSON(w, http.StatusCreated, b)
}

func (f *fakeAPI) hold(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Count    int    `json:"count"`
		Customer string `json:"customer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Count < 1 || req.Customer == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.screeningLocked(w, r.PathValue("id"))
	if !ok {
		return
	}
	if !f.admittedLocked(s, r) {
		writeError(w, http.StatusForbidden, "not_admitted", nil)
		return
	}
	seats := f.bestLocked(s, req.Count)
	if seats == nil {
		writeError(w, http.StatusConflict, "sold_out", nil)
		return
	}
	f.nextID++
	h := &fakeHold{screening: s.ID, customer: req.Customer, holdAnswer: holdAnswer{
		ID: fmt.Sprintf("h%d", f.nextID), Seats: seats, ExpiresAt: time.Now().Add(s.holdTTL), Token: fmt.Sprintf("t%d", f.nextID)}}
	f.holds[h.ID] = h
	writeJSON(w, http.StatusCreated, h.holdAnswer)
}

func (f *fakeAPI) confirm(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.holds[r.PathValue("id")]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "not_found", nil)
		return
	case strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") != h.Token:
		writeError(w, http.StatusForbidden, "forbidden", nil)
		return
	case h.confirmed == nil && !time.Now().Before(h.ExpiresAt):
		writeError(w, http.StatusConflict, "hold_expired", nil)
		return
	}
	if h.confirmed == nil {
		// The booking is made at the instant the expiry was checked:
		// the charge in writeLocked takes time, but under f.mu nothing
		// else can take the seats meanwhile.
		h.confirmedAt = time.Now()
		b, err := f.writeLocked(r.Context(), f.screenings[h.screening], h.Seats, h.customer)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "unavailable", nil)
			return
		}
		h.confirmed = &b
	}
	writeJSON(w, http.StatusCreated, struct {
		booking
		CreatedAt time.Time `json:"created_at"`
	}{*h.confirmed, h.confirmedAt})
}
