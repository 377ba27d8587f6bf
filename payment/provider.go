package payment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrStaleFence is returned by Provider.Begin, with CheckFences, when a
// charge carries a fencing token older than the newest the provider has
// seen for one of its seats.
var ErrStaleFence = errors.New("payment: stale fencing token")

// ErrUnknownCharge is returned by Provider.Refund for a charge id it never
// gave out.
var ErrUnknownCharge = errors.New("payment: unknown charge")

// Stats are a Provider's counts since it started.
type Stats struct {
	// Charges counts the charges made; Refunds, those given back.
	Charges int64 `json:"charges"`
	Refunds int64 `json:"refunds"`
	// Overlaps counts the charges that started for a seat while another
	// charge for the same seat was still in progress: two lock holders at
	// once.
	Overlaps int64 `json:"overlaps"`
	// RefusedStale counts the charges refused for a stale fencing token.
	RefusedStale int64 `json:"refused_stale"`
	// MaxConcurrent is the largest number of charges ever in progress at
	// once for one seat: 1 while every lock held.
	MaxConcurrent int64 `json:"max_concurrent"`
}

// ProviderOptions configure a Provider. The zero value works.
type ProviderOptions struct {
	// CheckFences makes the provider refuse a charge whose fencing token
	// for a seat is older than the newest it has seen for that seat.
	CheckFences bool
}

// Provider is an in-memory payment provider that detects overlapping
// charges per seat. Begin and Finish are its whole logic; Handler serves
// them over HTTP. It is safe for concurrent use.
type Provider struct {
	opts ProviderOptions

	// mu protects everything below. Begin and Finish hold it only to
	// update the maps, never during a charge's delay.
	mu sync.Mutex
	// inFlight counts the charges in progress per seat: a charge is in
	// progress from Begin to Finish. An overlap is a Begin that finds a
	// count above zero for one of its seats.
	inFlight map[seatKey]int64
	// newest is the newest fencing token seen per seat, from charges that
	// were not refused.
	newest map[seatKey]int64
	// refunded holds every charge made, true once refunded.
	refunded map[string]bool
	stats    Stats
	nextID   int64
}

// seatKey names a seat across screenings.
type seatKey struct{ screening, seat string }

// NewProvider returns an empty Provider.
func NewProvider(opts ProviderOptions) *Provider {
	return &Provider{
		opts:     opts,
		inFlight: make(map[seatKey]int64),
		newest:   make(map[seatKey]int64),
		refunded: make(map[string]bool),
	}
}

// Pending is a charge in progress, from Begin to Finish.
type Pending struct {
	seats []seatKey
}

// Begin starts a charge of req's seats and counts an overlap when another
// charge for one of them is in progress. With CheckFences it returns
// ErrStaleFence, and starts nothing, when one of req's fences is older than
// the newest seen for its seat. Every Pending must be finished.
func (p *Provider) Begin(req ChargeRequest) (*Pending, error) {
	keys := make([]seatKey, len(req.Seats))
	for i, s := range req.Seats {
		keys[i] = seatKey{req.ScreeningID, s}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opts.CheckFences {
		for _, k := range keys {
			if f, ok := req.Fences[k.seat]; ok && f < p.newest[k] {
				p.stats.RefusedStale++
				return nil, fmt.Errorf("%w: seat %s carries %d, %d was seen", ErrStaleFence, k.seat, f, p.newest[k])
			}
		}
	}
	overlap := false
	for _, k := range keys {
		if p.inFlight[k] > 0 {
			overlap = true
		}
		p.inFlight[k]++
		p.stats.MaxConcurrent = max(p.stats.MaxConcurrent, p.inFlight[k])
		if f, ok := req.Fences[k.seat]; ok && f > p.newest[k] {
			p.newest[k] = f
		}
	}
	if overlap {
		p.stats.Overlaps++
	}
	return &Pending{seats: keys}, nil
}

// Finish ends a charge begun with Begin. When made is true the charge is
// made and Finish returns its id; otherwise (its caller gave up) nothing is
// charged and the id is "".
func (p *Provider) Finish(c *Pending, made bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range c.seats {
		if p.inFlight[k]--; p.inFlight[k] == 0 {
			delete(p.inFlight, k)
		}
	}
	if !made {
		return ""
	}
	p.nextID++
	id := "ch_" + strconv.FormatInt(p.nextID, 10)
	p.refunded[id] = false
	p.stats.Charges++
	return id
}

// Refund gives a charge back; a second refund of the same charge changes
// nothing. It returns ErrUnknownCharge for an id Finish never returned.
func (p *Provider) Refund(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	done, ok := p.refunded[id]
	switch {
	case !ok:
		return fmt.Errorf("%w: %q", ErrUnknownCharge, id)
	case !done:
		p.refunded[id] = true
		p.stats.Refunds++
	}
	return nil
}

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// maxDelay bounds the delay a charge may ask for.
const maxDelay = time.Minute

// Handler serves the provider's HTTP protocol (see the package doc).
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", p.handleCharge)
	mux.HandleFunc("POST /v1/charges/{id}/refund", p.handleRefund)
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	return mux
}

func (p *Provider) handleCharge(w http.ResponseWriter, r *http.Request) {
	var req ChargeRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a charge request: "+err.Error())
		return
	}
	if req.BookingID == "" || req.ScreeningID == "" || len(req.Seats) == 0 || req.DelayMS < 0 || time.Duration(req.DelayMS)*time.Millisecond > maxDelay {
		writeError(w, http.StatusBadRequest, "invalid_request", "booking_id, screening_id and seats are required, and delay_ms must be 0 to 60000")
		return
	}
	pending, err := p.Begin(req)
	if errors.Is(err, ErrStaleFence) {
		writeError(w, http.StatusConflict, "stale_fence", err.Error())
		return
	}
	if err := wait(r.Context(), time.Duration(req.DelayMS)*time.Millisecond); err != nil {
		p.Finish(pending, false) // the caller is gone: nothing is charged
		return
	}
	writeJSON(w, http.StatusCreated, ChargeAnswer{ChargeID: p.Finish(pending, true)})
}

func (p *Provider) handleRefund(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := p.Refund(id); err != nil {
		writeError(w, http.StatusNotFound, "not_found", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"charge_id": id, "refunded": true})
}

// wait waits d, or until ctx ends (its error).
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the caller may be gone; nothing to do then
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e errorAnswer
	e.Error.Code, e.Error.Message = code, msg
	writeJSON(w, status, e)
}
