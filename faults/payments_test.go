package faults

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
)

// payments is the payment package's in-memory provider, served to the API
// instances (PAYMENT_URL) on a loopback port of the test process. Its
// overlap count is the lock's own measure: a charge that starts for a seat
// while another charge for it is in progress means two lock holders at
// once, whatever the fenced write then made of it.
type payments struct {
	*payment.Provider
	url string

	mu sync.Mutex // protects started
	// started holds, by screening id, a channel closed when the first
	// charge for that screening arrives.
	started map[string]chan struct{}
}

// startPayments serves a provider until t ends.
func startPayments(t *testing.T) *payments {
	t.Helper()
	p := &payments{Provider: payment.NewProvider(payment.ProviderOptions{}), started: map[string]chan struct{}{}}
	charges := p.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/charges" {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p.noticeCharge(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		charges.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// chargeStarted returns a channel closed when a charge for the screening
// arrives (at the start of its payment: the booking then holds its locks).
func (p *payments) chargeStarted(screeningID string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := make(chan struct{})
	p.started[screeningID] = c
	return c
}

// noticeCharge closes the channel of the screening a charge is for.
func (p *payments) noticeCharge(body []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, c := range p.started {
		if bytes.Contains(body, []byte(`"`+id+`"`)) {
			close(c)
			delete(p.started, id)
		}
	}
}

// checkCharges fails t unless charges minus refunds equals the bookings
// confirmed, as at any quiet moment they must: a charge whose booking was
// then refused is refunded before the client is answered.
func (p *payments) checkCharges(t *testing.T, confirmed int) payment.Stats {
	t.Helper()
	stats := p.Stats()
	if got := stats.Charges - stats.Refunds; got != int64(confirmed) {
		t.Errorf("charges %d - refunds %d = %d, want the %d bookings confirmed", stats.Charges, stats.Refunds, got, confirmed)
	}
	return stats
}

// awaitPayment waits until started (from chargeStarted) is closed: the
// booking pending then holds its locks and pays. It fails t when the
// booking answers first, or after 10 s.
func awaitPayment(t *testing.T, started <-chan struct{}, pending <-chan answer, who string) {
	t.Helper()
	select {
	case <-started:
	case a := <-pending:
		t.Fatalf("%s answered before its payment: %v", who, a)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not reach its payment within 10s", who)
	}
}
