package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The fake API's waiting room: enough of section 10 of the design for the
// onsale scenario. Buyers are admitted in the order they joined, rate a
// second from the first join (every decision under f.mu).

// fakeQueue is the waiting room of a fake screening.
type fakeQueue struct {
	rate   int
	first  time.Time // when the first buyer joined
	joined int
}

// fakeEntry is one buyer in a fake waiting room.
type fakeEntry struct {
	id, token, screening string
	seq                  int // 0 for the first buyer to join
}

// dueLocked is when entry e is admitted. The caller holds f.mu.
func (f *fakeAPI) dueLocked(e *fakeEntry) time.Time {
	q := f.screenings[e.screening].queue
	if f.jumpQueue && e.seq%2 == 1 {
		return q.first
	}
	return q.first.Add(time.Duration(e.seq) * time.Second / time.Duration(q.rate))
}

// admittedLocked reports whether request r may hold seats of s: s has no
// waiting room, or r carries the token of an admitted entry of s. The
// caller holds f.mu.
func (f *fakeAPI) admittedLocked(s *fakeScreening, r *http.Request) bool {
	if s.queue == nil {
		return true
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, e := range f.entries {
		if e.token == token && e.screening == s.ID {
			return !time.Now().Before(f.dueLocked(e))
		}
	}
	return false
}

func (f *fakeAPI) joinQueue(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Customer string `json:"customer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Customer == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.screeningLocked(w, r.PathValue("id"))
	if !ok {
		return
	}
	if s.queue == nil {
		writeError(w, http.StatusConflict, "no_queue", nil)
		return
	}
	if s.queue.joined == 0 {
		s.queue.first = time.Now()
	}
	f.nextID++
	e := &fakeEntry{id: fmt.Sprintf("q%d", f.nextID), token: fmt.Sprintf("qt%d", f.nextID), screening: s.ID, seq: s.queue.joined}
	s.queue.joined++
	f.entries[e.id] = e
	writeJSON(w, http.StatusCreated, f.entryLocked(e, e.token))
}

func (f *fakeAPI) getEntry(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[r.PathValue("id")]
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "not_found", nil)
	case r.Header.Get("Authorization") != "Bearer "+e.token:
		writeError(w, http.StatusForbidden, "forbidden", nil)
	default:
		writeJSON(w, http.StatusOK, f.entryLocked(e, ""))
	}
}

// entryLocked is the API's view of entry e. The caller holds f.mu.
func (f *fakeAPI) entryLocked(e *fakeEntry, token string) queueEntry {
	wait := time.Until(f.dueLocked(e))
	v := queueEntry{ID: e.id, Position: e.seq + 1, Admitted: wait <= 0, Token: token}
	if wait > 0 {
		v.EtaMS = wait.Milliseconds() + 1
	} else {
		v.Position, v.AdmittedUntil = 0, f.dueLocked(e).Add(10*time.Minute)
	}
	return v
}
