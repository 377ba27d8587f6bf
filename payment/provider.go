package payment

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrStaleFence is returned by Provider.Begin and Provider.Charge, with
// CheckFences, when a charge carries a fencing token older than the newest the provider has
// seen for one of its seats.
var ErrStaleFence = errors.New("payment: stale fencing token")

// StaleFenceError is a charge refused for a stale fencing token. Seen holds
// the newest fence the provider has seen for each of the charge's seats
// that it has seen one for: what a lock service must issue tokens above.
// It matches ErrStaleFence with errors.Is.
type StaleFenceError struct {
	Seat            string // the seat whose fence is stale
	Carried, Newest int64  // the fence the charge carried for it, and the newest seen
	Seen            map[string]int64
}

func (e *StaleFenceError) Error() string {
	return fmt.Sprintf("%v: seat %s carries %d, %d was seen", ErrStaleFence, e.Seat, e.Carried, e.Newest)
}

// Is makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Is(target error) bool { return target == ErrStaleFence }

// ErrUnknownCharge is returned by Provider.Refund for a charge id it never
// gave out.
var ErrUnknownCharge = errors.New("payment: unknown charge")

// ErrVoided is returned by Provider.Charge when the charge's idempotency
// key was voided (by Provider.RefundKey) before a charge completed under
// it: nothing was charged.
var ErrVoided = errors.New("payment: idempotency key voided")

// ErrNoKey is returned by Provider.RefundKey for an empty idempotency key.
var ErrNoKey = errors.New("payment: no idempotency key")

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
	// Voids counts the idempotency keys voided: refunded before a charge
	// completed under them. A void is not a charge.
	Voids int64 `json:"voids"`
}

// ProviderOptions configure a Provider. The zero value works.
type ProviderOptions struct {
	// CheckFences makes the provider refuse a charge whose fencing token
	// for a seat is older than the newest it has seen for that seat.
	CheckFences bool
}

// Provider is an in-memory payment provider that detects overlapping
// charges per seat. Begin and Finish count a charge's start and end;
// Charge and RefundKey add what a real provider has, idempotency keys and
// voids; Handler serves them over HTTP. It is safe for concurrent use.
//
// A Provider remembers every idempotency key it is given for its whole
// life, so its memory grows with the keys: it is a provider for tests and
// workshops, not for a process that runs for months.
type Provider struct {
	opts ProviderOptions

	// mu protects everything below, and the fields of every keyed. It is
	// held only to read and update them, never during a charge's
	// delay.
	mu sync.Mutex
	// inFlight counts the charges in progress per seat: a charge is in
	// progress from Begin to Finish, or to the void of its key. An overlap is a Begin that finds a
	// count above zero for one of its seats.
	inFlight map[seatKey]int64
	// newest is the newest fencing token seen per seat, from charges that
	// were not refused.
	newest map[seatKey]int64
	// refunded holds every charge made, true once refunded.
	refunded map[string]bool
	// keys holds every idempotency key charged or voided under (never
	// the empty key, which is no key), so that a repeat finds its key
	// however late it comes.
	keys   map[string]*keyed
	stats  Stats
	nextID int64
}

// seatKey names a seat across screenings.
type seatKey struct{ screening, seat string }

// keyed is what the provider knows of an idempotency key: the charge made
// or in progress under it, or its void.
//
// Its answer is settled once, under Provider.mu: chargeID and err are
// written before done is closed and never after, so whoever saw done
// closed may read them without the lock. pending and voided are read and
// written only under Provider.mu. A charge in progress is ended exactly
// once, by whichever takes Provider.mu first with done still open: Charge
// at the end of the delay (a charge), or RefundKey (a void).
type keyed struct {
	// done is closed when the key's answer is known: its charge was made
	// or refused, or the key was voided.
	done chan struct{}
	// chargeID is the charge made under the key; "" when none was.
	chargeID string
	// err is why no charge was made: ErrStaleFence or ErrVoided.
	err error
	// pending is the charge in progress under the key, nil when none is.
	pending *Pending
	// voided is true once RefundKey has voided the key.
	voided bool
}

// NewProvider returns an empty Provider.
func NewProvider(opts ProviderOptions) *Provider {
	return &Provider{
		opts:     opts,
		inFlight: make(map[seatKey]int64),
		newest:   make(map[seatKey]int64),
		refunded: make(map[string]bool),
		keys:     make(map[string]*keyed),
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
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.begin(req)
}

// begin is Begin with p.mu held.
func (p *Provider) begin(req ChargeRequest) (*Pending, error) {
	keys := make([]seatKey, len(req.Seats))
	for i, s := range req.Seats {
		keys[i] = seatKey{req.ScreeningID, s}
	}
	if p.opts.CheckFences {
		for _, k := range keys {
			if f, ok := req.Fences[k.seat]; ok && f < p.newest[k] {
				p.stats.RefusedStale++
				return nil, &StaleFenceError{Seat: k.seat, Carried: f, Newest: p.newest[k], Seen: p.seen(keys)}
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

// seen returns the newest fence seen for each of keys that has one. p.mu
// must be held.
func (p *Provider) seen(keys []seatKey) map[string]int64 {
	seen := make(map[string]int64, len(keys))
	for _, k := range keys {
		if f, ok := p.newest[k]; ok {
			seen[k.seat] = f
		}
	}
	return seen
}

// Finish ends a charge begun with Begin. When made is true the charge is
// made and Finish returns its id; otherwise nothing is charged and the id
// is "".
func (p *Provider) Finish(c *Pending, made bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.end(c)
	if !made {
		return ""
	}
	return p.charge()
}

// end takes the charge c out of progress. p.mu must be held.
func (p *Provider) end(c *Pending) {
	for _, k := range c.seats {
		if p.inFlight[k]--; p.inFlight[k] == 0 {
			delete(p.inFlight, k)
		}
	}
}

// charge makes a charge and returns its id. p.mu must be held.
func (p *Provider) charge() string {
	p.nextID++
	id := "ch_" + strconv.FormatInt(p.nextID, 10)
	p.refunded[id] = false
	p.stats.Charges++
	return id
}

// Refund gives a charge back; a second refund of the same charge changes
// nothing. It returns ErrUnknownCharge for an id no charge was made with.
func (p *Provider) Refund(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.refunded[id]; !ok {
		return fmt.Errorf("%w: %q", ErrUnknownCharge, id)
	}
	p.refund(id)
	return nil
}

// refund gives back the charge id, which was made, unless it was given
// back already. p.mu must be held.
func (p *Provider) refund(id string) {
	if !p.refunded[id] {
		p.refunded[id] = true
		p.stats.Refunds++
	}
}

// Charge charges for req under the idempotency key key when req's delay
// is over, and returns the charge's id. Nothing its caller does stops the
// charge, as nothing a caller does stops a real provider's: Charge returns
// when the charge's answer is known, which is at the end of its delay at
// the latest.
//
// The first call with a key makes the charge. A repeat begins nothing,
// charges nothing, counts no overlap and returns what the first returned,
// waiting for it while it is in progress. An empty key is no key: every
// call without one is a charge of its own.
//
// It returns an error wrapping ErrStaleFence when, with CheckFences, one
// of req's fences is older than the newest seen for its seat (nothing is
// begun), and an error wrapping ErrVoided when RefundKey voided the key
// before the charge completed: at once, when the charge was in progress.
func (p *Provider) Charge(key string, req ChargeRequest) (string, error) {
	p.mu.Lock()
	if k, ok := p.keys[key]; ok {
		p.mu.Unlock()
		<-k.done
		return k.chargeID, k.err
	}
	k := &keyed{done: make(chan struct{})}
	if key != "" {
		p.keys[key] = k
	}
	pending, err := p.begin(req)
	if err != nil {
		p.settle(k, "", err)
		p.mu.Unlock()
		return "", err
	}
	k.pending = pending
	p.mu.Unlock()

	t := time.NewTimer(time.Duration(req.DelayMS) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-k.done: // voided during the delay
		return k.chargeID, k.err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-k.done: // voided as the delay ended
	default:
		p.end(k.pending)
		p.settle(k, p.charge(), nil)
	}
	return k.chargeID, k.err
}

// settle gives k its answer: the charge made under it, or why none was.
// p.mu must be held, and k must not have its answer yet.
func (p *Provider) settle(k *keyed, chargeID string, err error) {
	k.chargeID, k.err, k.pending = chargeID, err, nil
	close(k.done)
}

// RefundAnswer is the answer of a refund by idempotency key, and the body
// of a 200 to POST /v1/refunds.
type RefundAnswer struct {
	IdempotencyKey string `json:"idempotency_key"`
	// Refunded is true when a charge made under the key was given back, by
	// this refund or an earlier one.
	Refunded bool `json:"refunded"`
	// Voided is true when the key was voided: no charge had completed
	// under it, and none can.
	Voided bool `json:"voided"`
	// ChargeID is the charge made under the key, when one was.
	ChargeID string `json:"charge_id,omitempty"`
}

// RefundKey settles the idempotency key key. When a charge was made under
// it, RefundKey gives that charge back (once) and answers Refunded and its
// ChargeID. Otherwise it voids the key and answers Voided: a charge in
// progress under the key ends at once, uncharged and no longer in
// progress for overlaps, and its Charge returns ErrVoided; a charge under
// the key later is refused with ErrVoided without beginning. A key whose
// charge was refused for a stale fence is voided too, but a repeat of that
// charge still gets the refusal it got first. Repeating RefundKey changes
// nothing and gives the same answer. It returns ErrNoKey for an empty key.
func (p *Provider) RefundKey(key string) (RefundAnswer, error) {
	if key == "" {
		return RefundAnswer{}, ErrNoKey
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	k, ok := p.keys[key]
	if !ok {
		k = &keyed{done: make(chan struct{})}
		p.keys[key] = k
	}
	select {
	case <-k.done:
	default: // no answer yet: none will be a charge
		if k.pending != nil {
			p.end(k.pending)
		}
		p.settle(k, "", fmt.Errorf("%w: %q", ErrVoided, key))
	}
	if k.chargeID != "" {
		p.refund(k.chargeID)
		return RefundAnswer{IdempotencyKey: key, Refunded: true, ChargeID: k.chargeID}, nil
	}
	if !k.voided {
		k.voided = true
		p.stats.Voids++
	}
	return RefundAnswer{IdempotencyKey: key, Voided: true}, nil
}

// Stats returns the counts so far.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// maxDelay bounds the delay a charge may ask for.
const maxDelay = time.Minute

// keyHeader carries a charge's idempotency key.
const keyHeader = "Idempotency-Key"

// Handler serves the provider's HTTP protocol (see the package doc).
func (p *Provider) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", p.handleCharge)
	mux.HandleFunc("POST /v1/charges/{id}/refund", p.handleRefund)
	mux.HandleFunc("POST /v1/refunds", p.handleRefundKey)
	mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, p.Stats())
	})
	return mux
}

// handleCharge charges under the request's Idempotency-Key, when it has
// one. It does not watch the request's context: the charge completes
// whether or not its caller still waits for the answer.
func (p *Provider) handleCharge(w http.ResponseWriter, r *http.Request) {
	var req ChargeRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a charge request: "+err.Error())
		return
	}
	if req.BookingID == "" || req.ScreeningID == "" || len(req.Seats) == 0 || req.DelayMS < 0 || time.Duration(req.DelayMS)*time.Millisecond > maxDelay {
		writeError(w, http.StatusBadRequest, "invalid_request", "booking_id, screening_id and seats are required, and delay_ms must be 0 to 60000")
		return
	}
	id, err := p.Charge(r.Header.Get(keyHeader), req)
	var stale *StaleFenceError
	switch {
	case errors.As(err, &stale):
		var e errorAnswer
		e.Error.Code, e.Error.Message, e.Error.Seen = "stale_fence", err.Error(), stale.Seen
		writeJSON(w, http.StatusConflict, e)
	case errors.Is(err, ErrVoided):
		writeError(w, http.StatusConflict, "voided", err.Error())
	default:
		writeJSON(w, http.StatusCreated, ChargeAnswer{ChargeID: id})
	}
}

func (p *Provider) handleRefund(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := p.Refund(id); err != nil {
		writeError(w, http.StatusNotFound, "not_found", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"charge_id": id, "refunded": true})
}

// RefundRequest is the body of POST /v1/refunds.
type RefundRequest struct {
	IdempotencyKey string `json:"idempotency_key"`
}

func (p *Provider) handleRefundKey(w http.ResponseWriter, r *http.Request) {
	var req RefundRequest
	if err := decode(w, r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a refund request: "+err.Error())
		return
	}
	answer, err := p.RefundKey(req.IdempotencyKey)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "idempotency_key is required")
		return
	}
	writeJSON(w, http.StatusOK, answer)
}

// decode reads r's JSON body, of at most 64 KiB and no fields but v's,
// into v.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
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
