package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The onsale scenario against the fake API: with a fair waiting room, an
// unfair one, and none. Each must sell the screening out through the one
// verification (payments, faults, linearizability), never confirm more
// seats than it has, and tell a fair queue from an unfair one.
func TestOnSaleAgainstFakeAPI(t *testing.T) {
	pay, charges := newProvider(t)
	faults := filepath.Join(t.TempDir(), "faults.jsonl")
	if err := os.WriteFile(faults, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"-scenario", "onsale", "-layout", "4x10", "-spike", "300ms", "-hold-ttl", "1s",
		"-abandon", "0.2", "-payment-delay", "1ms", "-payments", pay, "-faults", faults}

	t.Run("a fair waiting room sells out in order", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{charges: charges})
		html := filepath.Join(t.TempDir(), "report.html")
		rep, err := runJSON(t, append(common, "-targets", url+","+url, "-buyers", "200", "-queue-rate", "200", "-html", html)...)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		o := checkSoldOut(t, rep, 40)
		if o.QueueAdmitPerS != 200 || o.Joined != 200 || o.Admitted == 0 || o.QueueWaitMS.Max <= 0 {
			t.Errorf("queue figures %+v: want every buyer joined at 200/s, some admitted after a wait", o)
		}
		if o.FIFOInversions != 0 || rep.Result != resultClean {
			t.Errorf("fifo inversions %d, result %s (%v); want 0 and clean", o.FIFOInversions, rep.Result, rep.Harms)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		for _, panel := range []string{`data-panel="waiting room: buyers waiting"`, `data-panel="waiting room: admitted per bucket"`} {
			if !strings.Contains(string(page), panel) {
				t.Errorf("the HTML report has no %s", panel)
			}
		}
	})

	t.Run("a picker that leaves seats alone against the rule fails the run", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{charges: charges, strandSeats: true})
		rep, err := runJSON(t, append(common, "-targets", url, "-buyers", "100")...)
		if err == nil || rep.OnSale == nil || rep.OnSale.StrandedAvoidable == 0 || !strings.Contains(rep.verdictLine(), "STRANDED AVOIDABLY") {
			t.Errorf("run: %v; verdict %q: want avoidable stranded seats, named, failing the run", err, rep.verdictLine())
		}
	})

	t.Run("an unfair waiting room shows FIFO inversions", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{charges: charges, jumpQueue: true})
		rep, err := runJSON(t, append(common, "-targets", url, "-buyers", "100", "-queue-rate", "50")...)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		o := checkSoldOut(t, rep, 40)
		if o.FIFOInversions == 0 || !strings.Contains(rep.verdictLine(), "FIFO INVERSIONS") {
			t.Errorf("fifo inversions %d, verdict %q; want buyers who jumped the queue, named", o.FIFOInversions, rep.verdictLine())
		}
	})

	t.Run("without a waiting room every buyer races for holds", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{charges: charges})
		rep, err := runJSON(t, append(common, "-targets", url, "-buyers", "150")...)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		o := checkSoldOut(t, rep, 40)
		if o.QueueAdmitPerS != 0 || o.Joined != 0 || o.Refused == 0 {
			t.Errorf("queue figures %+v: want no queue, and refused holds", o)
		}
		if rep.Timeline == nil || rep.Timeline.Buckets[0].Waiting != nil {
			t.Errorf("timeline %+v: want one without a waiting room", rep.Timeline)
		}
	})

	t.Run("a screening made beforehand sells only its free seats", func(t *testing.T) {
		url := newFakeAPI(t, &fakeAPI{charges: charges})
		id := smallScreening(t, url, 2, 10, time.Second)
		if a := newClient(1, 1, 5*time.Second, "").book(context.Background(), url, id, []string{"A1", "B5"}, "early"); a.status != 201 {
			t.Fatalf("booking before the run: %+v", a)
		}
		rep, err := runJSON(t, "-targets", url, "-scenario", "onsale", "-screening", id, "-spike", "300ms",
			"-abandon", "0.2", "-payment-delay", "1ms", "-payments", pay)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if o := checkSoldOut(t, rep, 18); o.Buyers != 200 {
			t.Errorf("%d buyers, want 10 per seat of the screening", o.Buyers)
		}
	})
}

// checkSoldOut checks what every onsale run on the fake must show: sold
// out to the seat, clean data, a linearizable history, a balanced ledger.
func checkSoldOut(t *testing.T, rep *report, seats int) *onsaleCounts {
	t.Helper()
	o := rep.OnSale
	if o == nil {
		t.Fatal("no onsale figures in the report")
	}
	if !o.SoldOut || o.SellOutS <= 0 || o.ConfirmedSeats != seats || o.Capacity != seats || o.OverCapacity != 0 {
		t.Errorf("sold out %v after %vs, %d of %d seats confirmed, %d over; want all %d", o.SoldOut, o.SellOutS, o.ConfirmedSeats, o.Capacity, o.OverCapacity, seats)
	}
	causes := 0
	for _, n := range o.StrandedCauses {
		causes += n
	}
	if o.StrandedAvoidable != 0 || causes != o.StrandedSingleSeats {
		t.Errorf("%d stranded single seats, by cause %v: want none avoidable, and a cause for each", o.StrandedSingleSeats, o.StrandedCauses)
	}
	if rep.DoubleBookedSeats != 0 || rep.LostBookings != 0 || rep.Linearizable != linearizable {
		t.Errorf("double-booked %d, lost %d, linearizable %q", rep.DoubleBookedSeats, rep.LostBookings, rep.Linearizable)
	}
	h := rep.Holds
	// Whether any hold was abandoned is up to the random source; that
	// the figures add up, and abandoned seats came back, is not.
	if h == nil || h.Held != o.BuyersWithSeats || h.Held != h.Confirmed+h.Abandoned+h.ExpiredBeforeConfirm+h.ConfirmErrors ||
		h.ConfirmErrors != 0 || h.AbandonedSeatsNotFreed != 0 {
		t.Errorf("holds %+v with %d buyers served: want every hold confirmed, abandoned or expired, abandoned seats freed, and no confirm error", h, o.BuyersWithSeats)
	}
	if p := rep.Payments; p == nil || p.LedgerDiff != 0 || p.Charges-p.Refunds != int64(h.Confirmed) {
		t.Errorf("payments %+v for %d confirmed holds: want charges - refunds = confirmed", p, h.Confirmed)
	}
	if rep.Timeline == nil || len(rep.Timeline.Buckets) == 0 {
		t.Error("no timeline")
	}
	return o
}

func TestStrandedSingles(t *testing.T) {
	row := func(statuses string) []seatState {
		var seats []seatState
		for i, c := range statuses {
			st := map[rune]string{'.': "free", 'b': "booked", 'h': "held"}[c]
			seats = append(seats, seatState{ID: "A" + string(rune('0'+i+1)), Status: st})
		}
		return seats
	}
	for _, tc := range []struct {
		name  string
		seats []seatState
		want  int
	}{
		{"a full row", row("bbbbbb"), 0},
		{"an empty row", row("......"), 0},
		{"one between taken seats", row("bb.bbb"), 1},
		{"one at either end", row(".bhbb."), 2},
		{"a pair is not stranded", row("b..bbb"), 0},
		{"held seats take a seat like booked ones", row("h.h.hh"), 2},
		{"rows do not touch", append(row("bbbbb."), seatState{ID: "B1", Status: "free"}, seatState{ID: "B2", Status: "booked"}), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strandedSingles(tc.seats); got != tc.want {
				t.Errorf("stranded %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFIFOInversions(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	buyer := func(joinSent, joinDone, lastWaiting, admitted int) record {
		return record{buyer: &buyerRun{joined: true, joinSent: ms(joinSent), joinDone: ms(joinDone), lastWaiting: ms(lastWaiting), admitted: ms(admitted)}}
	}
	until := func(r record, s int) record {
		r.buyer.until = time.Unix(int64(s), 0)
		return r
	}
	for _, tc := range []struct {
		name   string
		buyers []record
		want   int
	}{
		{"in order", []record{buyer(0, 1, 50, 100), buyer(2, 3, 150, 200)}, 0},
		{"the later one admitted while the earlier still waited", []record{buyer(0, 1, 250, 300), buyer(2, 3, 0, 200)}, 1},
		{"joins that overlap have no order", []record{buyer(0, 5, 250, 300), buyer(2, 6, 0, 200)}, 0},
		{"a wait told before the admission is no inversion", []record{buyer(0, 1, 150, 300), buyer(2, 3, 0, 200)}, 0},
		{"the earlier one never admitted", []record{buyer(0, 1, 250, 0), buyer(2, 3, 0, 200), buyer(4, 5, 0, 210)}, 2},
		{"the queue's clock admitted the earlier one later", []record{until(buyer(0, 1, 0, 300), 20), buyer(2, 3, 0, 0), until(buyer(4, 5, 0, 290), 10)}, 1},
		{"the queue's clock admitted them in order", []record{until(buyer(0, 1, 0, 300), 10), until(buyer(4, 5, 0, 290), 10)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fifoInversions(tc.buyers); got != tc.want {
				t.Errorf("inversions %d, want %d", got, tc.want)
			}
		})
	}
}

func TestServedOutOfOrder(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	buyer := func(sent, done int, got bool) record {
		a := record{answer: answer{status: 409, code: "sold_out"}, sent: ms(sent), done: ms(done)}
		if got {
			a.answer = answer{status: 201}
		}
		return record{buyer: &buyerRun{attempts: []record{a}}}
	}
	queued := func(joinSent, joinDone int, got bool) record {
		r := buyer(joinDone+100, joinDone+110, got)
		r.buyer.joined, r.buyer.joinSent, r.buyer.joinDone = true, ms(joinSent), ms(joinDone)
		return r
	}
	for _, tc := range []struct {
		name   string
		buyers []record
		want   int
	}{
		{"first come, first served", []record{buyer(0, 1, true), buyer(2, 3, true), buyer(4, 5, false)}, 0},
		{"later buyers served after an earlier one went home", []record{buyer(0, 1, false), buyer(2, 3, true), buyer(4, 5, true)}, 2},
		{"requests that overlap are not ordered", []record{buyer(0, 3, false), buyer(2, 4, true), buyer(5, 6, false)}, 0},
		{"the join is when a queued buyer came", []record{queued(0, 1, false), queued(2, 3, true), buyer(0, 1, true)}, 1},
		{"a buyer who sent nothing did not come", []record{{buyer: &buyerRun{}}, buyer(2, 3, true)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := servedOutOfOrder(tc.buyers); got != tc.want {
				t.Errorf("served out of order %d, want %d", got, tc.want)
			}
		})
	}
}

func TestOnSaleFlags(t *testing.T) {
	parse := func(args ...string) (config, error) {
		return parseFlags("loadgen", args, func(string) string { return "" }, nil)
	}
	cfg, err := parse("-scenario", "onsale")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.rows != 10 || cfg.seatsPerRow != 20 || cfg.buyers != 2000 || cfg.clients != 2000 || cfg.requests != 2000 || cfg.spike != 2*time.Second || cfg.holdTTL != defaultHoldTTL {
		t.Errorf("defaults %dx%d, %d buyers, %d clients, %d requests, spike %v, hold ttl %v", cfg.rows, cfg.seatsPerRow, cfg.buyers, cfg.clients, cfg.requests, cfg.spike, cfg.holdTTL)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-scenario", "hold", "-buyers", "10"}, "-buyers: only the onsale scenario"},
		{[]string{"-scenario", "best", "-queue-rate", "10"}, "-queue-rate: only the onsale scenario"},
		{[]string{"-scenario", "onsale", "-clients", "10"}, "one client per buyer"},
		{[]string{"-scenario", "onsale", "-rate", "10"}, "closed loop only"},
		{[]string{"-scenario", "onsale", "-layout", "10by20"}, "want ROWSxSEATS"},
		{[]string{"-scenario", "onsale", "-layout", "27x20"}, "want 1 to 26 rows"},
		{[]string{"-scenario", "onsale", "-queue-rate", "-1"}, "-queue-rate -1"},
		{[]string{"-scenario", "onsale", "-screening", "x", "-queue-rate", "5"}, "not the -screening given"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

// The verdict fails a run that confirmed more seats than the screening
// has, and names FIFO inversions.
func TestVerdictNamesOnSaleHarms(t *testing.T) {
	rep := &report{Scenario: scenarioOnSale, OnSale: &onsaleCounts{OverCapacity: 2, FIFOInversions: 3, QueueAdmitPerS: 10}}
	want := "FAILED: CONFIRMED OVER CAPACITY (2 seats); also FIFO INVERSIONS (3 buyers); exit status 1"
	if got := rep.verdictLine(); got != want {
		t.Errorf("verdict %q, want %q", got, want)
	}
}
