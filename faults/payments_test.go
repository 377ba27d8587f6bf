package faults

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
)

// payments is the payment package's in-memory provider, served to the API
// instances (PAYMENT_URL) on a loopback port of the test process. Its
// overlap count is the lock's own measure: a charge that starts for a seat
// while another charge for it is in progress means two lock holders at
// once, whatever the fenced write then made of it.
type payments struct {
	*payment.Provider
	url  string
	kind provider

	mu sync.Mutex // protects started
	// started holds, by screening id, a channel closed when the first
	// charge for that screening arrives.
	started map[string]chan struct{}
}

// provider is the kind of payment provider a fault case charges through.
type provider struct {
	name        string // in subtest names and rows
	checkFences bool
}

var (
	// plainProvider charges whatever comes, and counts overlaps.
	plainProvider = provider{name: "plain"}
	// fenceProvider also refuses a charge whose fencing token for a seat
	// is older than the newest it has seen for that seat (409
	// stale_fence): a holder whose lock a newer holder has taken since,
	// if that newer holder's charge began first.
	fenceProvider = provider{name: "fence-checking", checkFences: true}
)

// providers returns the providers each case of a matrix runs against:
// both under SEATLOCK_FAULT_MATRIX=1, else the plain one.
func providers() []provider {
	if os.Getenv(matrixEnv) == "1" {
		return []provider{plainProvider, fenceProvider}
	}
	return []provider{plainProvider}
}

// subtest returns a case's subtest name with the provider it runs against.
func (k provider) subtest(name string) string { return name + "/provider=" + k.name }

// startPayments serves a provider of the given kind until t ends.
func startPayments(t *testing.T, kind provider) *payments {
	t.Helper()
	p := &payments{
		Provider: payment.NewProvider(payment.ProviderOptions{CheckFences: kind.checkFences}),
		kind:     kind,
		started:  map[string]chan struct{}{},
	}
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
// then refused is refunded before the client is answered. A charge the
// provider refused as stale is no charge: nothing to refund, and its
// booking answered 409 lock_lost (its holder is not the newest any more),
// so there must be at least as many of those among answers (every answer
// of the case) as refusals.
//
// A payment whose settle failed (its store or the provider was out of
// reach during the fault) is settled by a reconciler once it is overdue, so
// the check waits for that, up to settleWait.
func (p *payments) checkCharges(t *testing.T, confirmed int, answers []answer) payment.Stats {
	t.Helper()
	stats := p.Stats()
	for deadline := time.Now().Add(settleWait); stats.Charges-stats.Refunds != int64(confirmed) && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		stats = p.Stats()
	}
	if got := stats.Charges - stats.Refunds; got != int64(confirmed) {
		t.Errorf("charges %d - refunds %d = %d, want the %d bookings confirmed, not settled within %v", stats.Charges, stats.Refunds, got, confirmed, settleWait)
	}
	checkRefused(t, stats, answers)
	return stats
}

// settleWait bounds the wait for the payments of a fault case to settle:
// the longest a payment stays open (reservation.PaymentsSettleWithin, for
// the cases' payment delays of at most 1 s), and a margin for a loaded
// machine.
var settleWait = reservation.PaymentsSettleWithin(time.Second, reservation.DefaultReconcileEvery) + 10*time.Second

// checkRefused fails t when the provider refused more charges as stale
// than answers say 409 lock_lost: a refused charge answered otherwise.
func checkRefused(t *testing.T, stats payment.Stats, answers []answer) {
	t.Helper()
	lockLost := 0
	for _, a := range answers {
		if a.status == http.StatusConflict && a.code == "lock_lost" {
			lockLost++
		}
	}
	if stats.RefusedStale > int64(lockLost) {
		t.Errorf("the provider refused %d charges as stale, but only %d bookings answered 409 lock_lost", stats.RefusedStale, lockLost)
	}
}

// cell returns the payment cell of a case's row: the provider's kind and
// what it counted (stats, or the part of them a case is judged on).
func (p *payments) cell(stats payment.Stats) string {
	return fmt.Sprintf("%s provider: overlaps %d (charges %d, refunds %d, refused stale %d)",
		p.kind.name, stats.Overlaps, stats.Charges, stats.Refunds, stats.RefusedStale)
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
