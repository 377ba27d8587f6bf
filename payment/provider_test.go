package payment_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/payment"
)

func charge(screening string, fences map[string]int64, seats ...string) payment.ChargeRequest {
	return payment.ChargeRequest{BookingID: "b", ScreeningID: screening, Seats: seats, Customer: "c", Fences: fences}
}

// step is one event of a hand-made timeline: a charge begins (begin names
// it) or a begun charge ends (end names it, made says whether it was made).
type step struct {
	begin, end string
	req        payment.ChargeRequest
	made       bool
	refused    bool // the begin is expected to be refused as stale
}

func TestProviderOverlaps(t *testing.T) {
	fence := func(seat string, f int64) map[string]int64 { return map[string]int64{seat: f} }
	tests := []struct {
		name        string
		checkFences bool
		steps       []step
		want        payment.Stats
	}{
		{
			name: "one after the other is no overlap",
			steps: []step{
				{begin: "a", req: charge("s", nil, "A1")}, {end: "a", made: true},
				{begin: "b", req: charge("s", nil, "A1")}, {end: "b", made: true},
			},
			want: payment.Stats{Charges: 2, MaxConcurrent: 1},
		},
		{
			name: "a second charge while the first is in progress overlaps",
			steps: []step{
				{begin: "a", req: charge("s", nil, "A1")},
				{begin: "b", req: charge("s", nil, "A1")},
				{end: "a", made: true}, {end: "b", made: true},
			},
			want: payment.Stats{Charges: 2, Overlaps: 1, MaxConcurrent: 2},
		},
		{
			name: "one shared seat of several is enough, counted once per charge",
			steps: []step{
				{begin: "a", req: charge("s", nil, "A1", "A2")},
				{begin: "b", req: charge("s", nil, "A1", "A2", "A3")},
				{end: "a", made: true}, {end: "b", made: false},
			},
			want: payment.Stats{Charges: 1, Overlaps: 1, MaxConcurrent: 2},
		},
		{
			name: "same seat id in another screening is another seat",
			steps: []step{
				{begin: "a", req: charge("s1", nil, "A1")},
				{begin: "b", req: charge("s2", nil, "A1")},
				{end: "a", made: true}, {end: "b", made: true},
			},
			want: payment.Stats{Charges: 2, MaxConcurrent: 1},
		},
		{
			name: "a charge given up still overlapped while it was in progress",
			steps: []step{
				{begin: "a", req: charge("s", nil, "A1")},
				{begin: "b", req: charge("s", nil, "A1")},
				{end: "b", made: false},
				{end: "a", made: true},
				{begin: "c", req: charge("s", nil, "A1")}, {end: "c", made: true},
			},
			want: payment.Stats{Charges: 2, Overlaps: 1, MaxConcurrent: 2},
		},
		{
			name:        "an older fence after a newer one is refused with fence checking",
			checkFences: true,
			steps: []step{
				{begin: "new", req: charge("s", fence("A1", 7))}, {end: "new", made: true},
				{begin: "old", req: charge("s", fence("A1", 6)), refused: true},
				{begin: "same", req: charge("s", fence("A1", 7))}, {end: "same", made: true},
			},
			want: payment.Stats{Charges: 2, RefusedStale: 1, MaxConcurrent: 1},
		},
		{
			name: "without fence checking the older fence is charged",
			steps: []step{
				{begin: "new", req: charge("s", fence("A1", 7))}, {end: "new", made: true},
				{begin: "old", req: charge("s", fence("A1", 6))}, {end: "old", made: true},
			},
			want: payment.Stats{Charges: 2, MaxConcurrent: 1},
		},
		{
			name:        "a refused charge is not in progress",
			checkFences: true,
			steps: []step{
				{begin: "new", req: charge("s", fence("A1", 9))},
				{begin: "old", req: charge("s", fence("A1", 3)), refused: true},
				{end: "new", made: true},
				{begin: "next", req: charge("s", fence("A1", 10))}, {end: "next", made: true},
			},
			want: payment.Stats{Charges: 2, RefusedStale: 1, MaxConcurrent: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.steps {
				tt.steps[i].req.Seats = append(tt.steps[i].req.Seats, seatsOf(tt.steps[i].req)...)
			}
			p := payment.NewProvider(payment.ProviderOptions{CheckFences: tt.checkFences})
			pending := map[string]*payment.Pending{}
			for _, s := range tt.steps {
				if s.begin != "" {
					c, err := p.Begin(s.req)
					if s.refused != errors.Is(err, payment.ErrStaleFence) {
						t.Fatalf("begin %s: err = %v, want refused %v", s.begin, err, s.refused)
					}
					var stale *payment.StaleFenceError
					if s.refused && (!errors.As(err, &stale) || len(stale.Seen) == 0) {
						t.Fatalf("begin %s: err = %#v, want a *StaleFenceError naming the fences seen", s.begin, err)
					}
					pending[s.begin] = c
					continue
				}
				id := p.Finish(pending[s.end], s.made)
				if (id != "") != s.made {
					t.Fatalf("finish %s (made %v) returned id %q", s.end, s.made, id)
				}
			}
			if got := p.Stats(); got != tt.want {
				t.Errorf("stats = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// seatsOf gives a request built with only fences its seats.
func seatsOf(r payment.ChargeRequest) []string {
	if len(r.Seats) > 0 {
		return nil
	}
	var seats []string
	for s := range r.Fences {
		seats = append(seats, s)
	}
	return seats
}

func TestProviderRefund(t *testing.T) {
	p := payment.NewProvider(payment.ProviderOptions{})
	c, err := p.Begin(charge("s", nil, "A1"))
	if err != nil {
		t.Fatal(err)
	}
	id := p.Finish(c, true)
	for range 2 {
		if err := p.Refund(id); err != nil {
			t.Fatalf("refund %s: %v", id, err)
		}
	}
	if err := p.Refund("ch_nope"); !errors.Is(err, payment.ErrUnknownCharge) {
		t.Errorf("refund of an unknown charge: %v, want ErrUnknownCharge", err)
	}
	if got := p.Stats(); got.Charges != 1 || got.Refunds != 1 {
		t.Errorf("stats = %+v, want 1 charge and 1 refund (a second refund is not counted)", got)
	}
}

// serve serves a new Provider until t ends, and returns it with its URL.
func serve(t *testing.T, opts payment.ProviderOptions) (*payment.Provider, string) {
	t.Helper()
	p := payment.NewProvider(opts)
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// answer is a provider's answer to a POST: its status, and the fields of
// every body the protocol has.
type answer struct {
	status int
	payment.RefundAnswer
	Error struct {
		Code string `json:"code"`
	} `json:"error"`
}

// post sends body to url, with an Idempotency-Key header when key is not
// empty, and returns the answer. It does not fail a test itself, so that
// it can run in a goroutine.
func post(ctx context.Context, url, key string, body any) (answer, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return answer{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return answer{}, err
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return answer{}, fmt.Errorf("answer %d: %w", resp.StatusCode, err)
	}
	return a, nil
}

// delayed is a charge request for one seat that takes d.
func delayed(seat string, d time.Duration) payment.ChargeRequest {
	r := charge("s", nil, seat)
	r.DelayMS = d.Milliseconds()
	return r
}

// eventually fails t unless cond is true within 10s; what says what is
// awaited.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// inProgress returns a condition true once a charge has begun at p.
func inProgress(p *payment.Provider) func() bool {
	return func() bool { return p.Stats().MaxConcurrent > 0 }
}

// result is what a charge sent by chargeLater got.
type result struct {
	answer
	err error
}

// chargeLater sends a charge in a goroutine and returns where its result
// will be.
func chargeLater(ctx context.Context, url, key string, req payment.ChargeRequest) <-chan result {
	c := make(chan result, 1)
	go func() {
		a, err := post(ctx, url+"/v1/charges", key, req)
		c <- result{a, err}
	}()
	return c
}

// await returns the result from c, failing t when it does not come
// within 10s; what names the charge.
func await(t *testing.T, c <-chan result, what string) result {
	t.Helper()
	return wait.Recv(t, c, 10*time.Second, "the answer to "+what)
}

// mustPost posts body to url and fails t unless the answer's status is
// want.
func mustPost(t *testing.T, url, key string, body any, want int) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := post(ctx, url, key, body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	if a.status != want {
		t.Fatalf("POST %s: %d %s, want %d", url, a.status, a.Error.Code, want)
	}
	return a
}

// checkStats fails t unless p's stats are want.
func checkStats(t *testing.T, p *payment.Provider, want payment.Stats) {
	t.Helper()
	if got := p.Stats(); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}

func TestChargeCompletesAfterItsCallerHangsUp(t *testing.T) {
	p, url := serve(t, payment.ProviderOptions{})
	ctx, hangUp := context.WithCancel(context.Background())
	charged := chargeLater(ctx, url, "", delayed("A1", 300*time.Millisecond))
	eventually(t, "the charge begins", inProgress(p))
	hangUp()
	if r := await(t, charged, "the charge hung up on"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the caller that hung up got %d (err %v), want context.Canceled", r.status, r.err)
	}
	eventually(t, "the charge of a caller that hung up is made", func() bool { return p.Stats().Charges == 1 })
}

func TestChargeIdempotencyKey(t *testing.T) {
	t.Run("a repeat gets the first charge's id and charges nothing more", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		first := mustPost(t, url+"/v1/charges", "pay_1", delayed("A1", 0), http.StatusCreated)
		repeat := mustPost(t, url+"/v1/charges", "pay_1", delayed("A1", 0), http.StatusCreated)
		if first.ChargeID == "" || repeat.ChargeID != first.ChargeID {
			t.Errorf("charge ids %q then %q, want the same one twice", first.ChargeID, repeat.ChargeID)
		}
		checkStats(t, p, payment.Stats{Charges: 1, MaxConcurrent: 1})
	})
	t.Run("without a key every charge is a charge of its own", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		first := mustPost(t, url+"/v1/charges", "", delayed("A1", 0), http.StatusCreated)
		second := mustPost(t, url+"/v1/charges", "", delayed("A1", 0), http.StatusCreated)
		if first.ChargeID == second.ChargeID {
			t.Errorf("two charges without a key both got %q", first.ChargeID)
		}
		checkStats(t, p, payment.Stats{Charges: 2, MaxConcurrent: 1})
	})
	t.Run("a repeat during the first's delay waits for its answer", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		firstc := chargeLater(context.Background(), url, "pay_1", delayed("A1", 300*time.Millisecond))
		eventually(t, "the first charge begins", inProgress(p))
		repeat := mustPost(t, url+"/v1/charges", "pay_1", delayed("A1", 300*time.Millisecond), http.StatusCreated)
		first := await(t, firstc, "the first charge")
		if first.err != nil || first.status != http.StatusCreated || repeat.ChargeID != first.ChargeID {
			t.Errorf("first %d %q (err %v), repeat %q: want both 201 with the same charge id",
				first.status, first.ChargeID, first.err, repeat.ChargeID)
		}
		checkStats(t, p, payment.Stats{Charges: 1, MaxConcurrent: 1})
	})
	t.Run("a repeat of a refused charge is refused the same", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{CheckFences: true})
		mustPost(t, url+"/v1/charges", "pay_new", charge("s", map[string]int64{"A1": 7}, "A1"), http.StatusCreated)
		for range 2 {
			a := mustPost(t, url+"/v1/charges", "pay_old", charge("s", map[string]int64{"A1": 6}, "A1"), http.StatusConflict)
			if a.Error.Code != "stale_fence" {
				t.Errorf("a stale charge answered %q, want stale_fence", a.Error.Code)
			}
		}
		// Refunding the refused key voids it; its charge stays refused
		// as it was first.
		want := payment.RefundAnswer{IdempotencyKey: "pay_old", Voided: true}
		if got := mustPost(t, url+"/v1/refunds", "", payment.RefundRequest{IdempotencyKey: "pay_old"}, http.StatusOK); got.RefundAnswer != want {
			t.Errorf("refund of the refused key answered %+v, want %+v", got.RefundAnswer, want)
		}
		if a := mustPost(t, url+"/v1/charges", "pay_old", charge("s", map[string]int64{"A1": 6}, "A1"), http.StatusConflict); a.Error.Code != "stale_fence" {
			t.Errorf("a repeat after the void answered %q, want stale_fence", a.Error.Code)
		}
		checkStats(t, p, payment.Stats{Charges: 1, Voids: 1, RefusedStale: 1, MaxConcurrent: 1})
	})
}

func TestRefundByKey(t *testing.T) {
	refund := func(key string) payment.RefundRequest { return payment.RefundRequest{IdempotencyKey: key} }
	t.Run("a completed charge is refunded once", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		charged := mustPost(t, url+"/v1/charges", "pay_1", delayed("A1", 0), http.StatusCreated)
		want := payment.RefundAnswer{IdempotencyKey: "pay_1", Refunded: true, ChargeID: charged.ChargeID}
		for i := range 2 {
			if got := mustPost(t, url+"/v1/refunds", "", refund("pay_1"), http.StatusOK); got.RefundAnswer != want {
				t.Errorf("refund %d answered %+v, want %+v", i+1, got.RefundAnswer, want)
			}
		}
		checkStats(t, p, payment.Stats{Charges: 1, Refunds: 1, MaxConcurrent: 1})
	})
	t.Run("a void during the delay ends the charge at once", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		// The charge takes 30s, its caller waits 10s at most: only a
		// void that ends it at once answers in time.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		charged := chargeLater(ctx, url, "pay_1", delayed("A1", 30*time.Second))
		eventually(t, "the charge begins", inProgress(p))
		want := payment.RefundAnswer{IdempotencyKey: "pay_1", Voided: true}
		if got := mustPost(t, url+"/v1/refunds", "", refund("pay_1"), http.StatusOK); got.RefundAnswer != want {
			t.Errorf("refund answered %+v, want %+v", got.RefundAnswer, want)
		}
		if r := await(t, charged, "the voided charge"); r.err != nil || r.status != http.StatusConflict || r.Error.Code != "voided" {
			t.Fatalf("the voided charge got %d %q (err %v), want 409 voided long before its 30s delay", r.status, r.Error.Code, r.err)
		}
		checkStats(t, p, payment.Stats{Voids: 1, MaxConcurrent: 1})
		// The voided charge is no longer in progress: a new one for its
		// seat is no overlap.
		mustPost(t, url+"/v1/charges", "pay_2", delayed("A1", 0), http.StatusCreated)
		checkStats(t, p, payment.Stats{Charges: 1, Voids: 1, MaxConcurrent: 1})
	})
	t.Run("a charge after a void is refused without beginning", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		want := payment.RefundAnswer{IdempotencyKey: "pay_1", Voided: true}
		if got := mustPost(t, url+"/v1/refunds", "", refund("pay_1"), http.StatusOK); got.RefundAnswer != want {
			t.Errorf("refund answered %+v, want %+v", got.RefundAnswer, want)
		}
		if a := mustPost(t, url+"/v1/charges", "pay_1", delayed("A1", 0), http.StatusConflict); a.Error.Code != "voided" {
			t.Errorf("a charge under a voided key answered %q, want voided", a.Error.Code)
		}
		if got := mustPost(t, url+"/v1/refunds", "", refund("pay_1"), http.StatusOK); got.RefundAnswer != want {
			t.Errorf("a repeated refund answered %+v, want %+v", got.RefundAnswer, want)
		}
		checkStats(t, p, payment.Stats{Voids: 1})
	})
	t.Run("a refund without a key is refused", func(t *testing.T) {
		p, url := serve(t, payment.ProviderOptions{})
		for _, body := range []any{struct{}{}, refund("")} {
			if a := mustPost(t, url+"/v1/refunds", "", body, http.StatusBadRequest); a.Error.Code != "invalid_request" {
				t.Errorf("%+v answered %q, want invalid_request", body, a.Error.Code)
			}
		}
		checkStats(t, p, payment.Stats{})
	})
}
