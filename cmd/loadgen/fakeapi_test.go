package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
)

// fakeAPI implements just enough of the API of docs/api.md for loadgen to run
// against, with switches that break it in the ways loadgen must catch.
type fakeAPI struct {
	// demo allows the unsafe strategies (lock none, guard off).
	demo bool
	// doubleBook makes every strategy unsafe: a blind write without any
	// check, so every booking of a seat gets 201 and the last one wins.
	doubleBook atomic.Bool
	// failAfterBooking makes every n-th booking answer 503 although it
	// booked (a lost answer: allowed, an explained phantom).
	failAfterBooking int64
	// refuseAfterBooking makes every n-th booking answer 409 although it
	// booked (a lie: a contradicted phantom).
	refuseAfterBooking int64
	// failConflicts makes every n-th request answer 503 instead of
	// 409 seat_taken (an ambiguous answer loadgen must model as such).
	failConflicts int64
	// payment is the payment delay of screenings created without one.
	payment time.Duration
	// adminToken, when set, is required to create a screening.
	adminToken string
	// charges, when set, is the payment provider every booking, and
	// every confirm of a hold, charges through before it is written.
	charges *payment.Client
	// chargeTwice makes every n-th charge go through twice: a charge that
	// nobody booked or refunded, which the ledger must catch.
	chargeTwice int64
	// jumpQueue lets every second buyer who joins a waiting room in at
	// once, ahead of those who joined before: unfair admission, which
	// loadgen must see as FIFO inversions.
	jumpQueue bool
	// strandSeats makes best available break its rule on purpose: it
	// picks a block that leaves one seat alone whenever one does.
	strandSeats bool

	// mu protects everything below. The safe path holds it from the check
	// to the write, which makes it the "global" strategy: correct, never
	// parallel, and the simplest thing a fake can do.
	mu         sync.Mutex
	screenings map[string]*fakeScreening
	bookings   map[string]booking
	holds      map[string]*fakeHold
	entries    map[string]*fakeEntry // queue entries by id
	nextID     int
	calls      int64
	charged    int64
}

type fakeScreening struct {
	screening
	holdTTL time.Duration
	seats   map[string]string // seat id -> booking id
	queue   *fakeQueue        // nil without a waiting room
}

func newFakeAPI(t *testing.T, f *fakeAPI) string {
	t.Helper()
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// handler is the fake's routes, for a server of the caller's.
func (f *fakeAPI) handler() http.Handler {
	f.screenings = map[string]*fakeScreening{}
	f.bookings = map[string]booking{}
	f.holds = map[string]*fakeHold{}
	f.entries = map[string]*fakeEntry{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("POST /v1/screenings", f.createScreening)
	mux.HandleFunc("GET /v1/screenings/{id}", f.getScreening)
	mux.HandleFunc("GET /v1/screenings/{id}/seats", f.getSeats)
	mux.HandleFunc("POST /v1/screenings/{id}/bookings", f.book)
	mux.HandleFunc("GET /v1/bookings/{id}", f.getBooking)
	mux.HandleFunc("POST /v1/screenings/{id}/holds", f.hold)
	mux.HandleFunc("POST /v1/holds/{id}/confirm", f.confirm)
	mux.HandleFunc("POST /v1/screenings/{id}/queue", f.joinQueue)
	mux.HandleFunc("GET /v1/queue/{id}", f.getEntry)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code string, seats []string) {
	var e apiError
	e.Error.Code, e.Error.Message, e.Error.Seats = code, code, seats
	writeJSON(w, status, e)
}

func (f *fakeAPI) createScreening(w http.ResponseWriter, r *http.Request) {
	if f.adminToken != "" && r.Header.Get("Authorization") != "Bearer "+f.adminToken {
		writeError(w, http.StatusUnauthorized, "unauthorized", nil)
		return
	}
	var req createScreening
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Rows < 1 || req.Rows > 26 || req.SeatsPerRow < 1 || req.SeatsPerRow > 100 {
		writeError(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	s := screening{Rows: req.Rows, SeatsPerRow: req.SeatsPerRow, Lock: "keyed+redis", Guard: "fence", PaymentDelayMS: f.payment.Milliseconds()}
	if req.Lock != "" {
		s.Lock = req.Lock
	}
	if req.Guard != "" {
		s.Guard = req.Guard
	}
	if req.PaymentDelayMS != nil {
		s.PaymentDelayMS = *req.PaymentDelayMS
	}
	holdTTL := 10 * time.Minute
	if req.HoldTTLMS != nil {
		holdTTL = time.Duration(*req.HoldTTLMS) * time.Millisecond
	}
	if (s.Lock == "none" || s.Guard == "off") && !f.demo {
		writeError(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	f.mu.Lock()
	f.nextID++
	s.ID = fmt.Sprintf("s%d", f.nextID)
	fs := &fakeScreening{screening: s, holdTTL: holdTTL, seats: map[string]string{}}
	if req.Queue != nil {
		fs.Queue, fs.queue = req.Queue, &fakeQueue{rate: req.Queue.AdmitPerS}
	}
	f.screenings[s.ID] = fs
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, s)
}

func (f *fakeAPI) getScreening(w http.ResponseWriter, r *http.Request) {
	writeFound(f, w, f.screenings, r.PathValue("id"), func(s *fakeScreening) any { return s.screening })
}

// writeFound answers 200 with view of m[id], read under f.mu, or 404.
func writeFound[T any](f *fakeAPI, w http.ResponseWriter, m map[string]T, id string, view func(T) any) {
	f.mu.Lock()
	v, ok := m[id]
	f.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", nil)
		return
	}
	writeJSON(w, http.StatusOK, view(v))
}

// screeningLocked returns screening id, or answers 404 and false. The
// caller holds f.mu.
func (f *fakeAPI) screeningLocked(w http.ResponseWriter, id string) (*fakeScreening, bool) {
	s, ok := f.screenings[id]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", nil)
	}
	return s, ok
}

func (f *fakeAPI) getSeats(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.screeningLocked(w, r.PathValue("id"))
	if !ok {
		return
	}
	var seats []seatState
	for i := range s.capacity() {
		id := seatID(i, s.SeatsPerRow)
		st := seatState{ID: id, Status: "free"}
		if b := s.seats[id]; b != "" {
			st.Status, st.BookingID = "booked", b
		} else if f.heldLocked(s.ID, id) {
			st.Status = "held"
		}
		seats = append(seats, st)
	}
	writeJSON(w, http.StatusOK, map[string]any{"screening_id": s.ID, "seats": seats})
}

func (f *fakeAPI) getBooking(w http.ResponseWriter, r *http.Request) {
	writeFound(f, w, f.bookings, r.PathValue("id"), func(b booking) any { return b })
}

func (f *fakeAPI) book(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Seats    []string `json:"seats"`
		Count    int      `json:"count"`
		Customer string   `json:"customer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || (len(req.Seats) == 0) == (req.Count == 0) || req.Customer == "" {
		writeError(w, http.StatusBadRequest, "invalid_request", nil)
		return
	}
	if req.Count > 0 {
		f.bookBest(r.Context(), w, r.PathValue("id"), req.Count, req.Customer)
		return
	}
	f.bookSeats(r.Context(), w, r.PathValue("id"), req.Seats, req.Customer)
}

// bookSeats books the seats of screening id, or answers why not.
func (f *fakeAPI) bookSeats(ctx context.Context, w http.ResponseWriter, id string, seats []string, customer string) {
	f.mu.Lock()
	s, ok := f.screeningLocked(w, id)
	if !ok {
		f.mu.Unlock()
		return
	}
	// The unsafe path does not even check: a blind write, last writer
	// wins. Real races are timing-dependent; the fake's must not be, or a
	// test of loadgen's verifier could pass by luck.
	unsafe := f.doubleBook.Load() || s.Lock == "none" || s.Guard == "off"
	var taken []string
	for _, seat := range seats {
		if !unsafe && s.seats[seat] != "" {
			taken = append(taken, seat)
		}
	}
	if len(taken) > 0 {
		f.calls++
		calls := f.calls
		f.mu.Unlock()
		if f.failConflicts > 0 && calls%f.failConflicts == 0 {
			writeError(w, http.StatusServiceUnavailable, "unavailable", nil)
			return
		}
		writeError(w, http.StatusConflict, "seat_taken", taken)
		return
	}
	// The mutex is held through the payment: the "global" strategy.
	time.Sleep(time.Duration(s.PaymentDelayMS) * time.Millisecond)
	b, err := f.writeLocked(ctx, s, seats, customer)
	f.calls++
	calls := f.calls
	f.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "unavailable", nil)
		return
	}

	switch {
	case f.failAfterBooking > 0 && calls%f.failAfterBooking == 0:
		writeError(w, http.StatusServiceUnavailable, "unavailable", nil)
	case f.refuseAfterBooking > 0 && calls%f.refuseAfterBooking == 0:
		writeError(w, http.StatusConflict, "seat_busy", nil)
	default:
		writeJSON(w, http.StatusCreated, b)
	}
}

// writeLocked charges for the seats (when the fake charges) and books
// them. The caller holds f.mu.
func (f *fakeAPI) writeLocked(ctx context.Context, s *fakeScreening, seats []string, customer string) (booking, error) {
	f.nextID++
	b := booking{ID: fmt.Sprintf("b%d", f.nextID), Seats: slices.Clone(seats), Customer: customer}
	if err := f.chargeLocked(ctx, s, b); err != nil {
		return booking{}, err
	}
	for _, seat := range seats {
		s.seats[seat] = b.ID
	}
	f.bookings[b.ID] = b
	return b, nil
}

// chargeLocked charges for booking b through f.charges, when set: twice
// every chargeTwice-th time. The caller holds f.mu.
func (f *fakeAPI) chargeLocked(ctx context.Context, s *fakeScreening, b booking) error {
	if f.charges == nil {
		return nil
	}
	f.charged++
	times := 1
	if f.chargeTwice > 0 && f.charged%f.chargeTwice == 0 {
		times = 2
	}
	for range times {
		_, err := f.charges.Charge(ctx, reservation.Charge{BookingID: b.ID, ScreeningID: s.ID, Seats: b.Seats, Customer: b.Customer})
		if err != nil {
			return err
		}
	}
	return nil
}
