package payment_test

import (
	"errors"
	"testing"

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
