package main

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"
)

// The ledger: money is state too. At rest, what the provider charged
// during the run minus what it refunded equals the bookings the run
// confirmed: a charge more is a customer charged for a seat they did not
// get, a charge less a seat given away. A charge nobody booked can be
// settled after the run (the API's reconciler refunds or voids what a
// crash, a pause or a hang-up left pending), so loadgen waits for the
// ledger to balance, within -settle-wait, before it judges it.

// defaultSettleWait is how long loadgen waits by default for the ledger to
// balance after a run: long enough for the API's reconciler to settle a
// payment that a crash, a pause or a hang-up left pending.
const defaultSettleWait = 30 * time.Second

// providerStats are the payment provider's counts since it started, as
// GET /v1/stats answers them. Voids is nil for a provider that does not
// count voids (a void is not a charge: it refuses one that never came).
type providerStats struct {
	Charges       int64  `json:"charges"`
	Refunds       int64  `json:"refunds"`
	Voids         *int64 `json:"voids"`
	Overlaps      int64  `json:"overlaps"`
	RefusedStale  int64  `json:"refused_stale"`
	MaxConcurrent int64  `json:"max_concurrent"`
}

// paymentStats reads the provider's stats at url (its base URL).
func (c *client) paymentStats(ctx context.Context, url string) (providerStats, error) {
	var s providerStats
	err := c.do(ctx, http.MethodGet, url+"/v1/stats", nil, http.StatusOK, &s)
	return s, err
}

// paymentCounts are the provider's counts for one run (the difference of
// its stats after and before the run) and the run's ledger.
type paymentCounts struct {
	Charges      int64  `json:"charges"`
	Refunds      int64  `json:"refunds"`
	Voids        *int64 `json:"voids,omitempty"` // only from a provider that counts them
	Overlaps     int64  `json:"overlaps"`
	RefusedStale int64  `json:"refused_stale"`

	// Confirmed is the bookings the run confirmed, as the final seat maps
	// show them (for hold: its confirmed holds).
	Confirmed int `json:"confirmed"`
	// LedgerOK is true when charges - refunds = Confirmed; LedgerDiff is
	// charges - refunds - Confirmed, and Ledger says it in words.
	LedgerOK   bool   `json:"ledger_ok"`
	LedgerDiff int64  `json:"ledger_diff"`
	Ledger     string `json:"ledger"`
	// NotCharging is true when the provider saw no charge and no refund
	// while bookings were confirmed: the APIs do not charge through it.
	NotCharging bool `json:"not_charging,omitempty"`
	// LedgerWaitS is how long loadgen waited for the ledger to balance.
	LedgerWaitS float64 `json:"ledger_wait_s"`
}

// since returns the counts from before to after, the ledger not judged.
func since(before, after providerStats) *paymentCounts {
	p := &paymentCounts{
		Charges:      after.Charges - before.Charges,
		Refunds:      after.Refunds - before.Refunds,
		Overlaps:     after.Overlaps - before.Overlaps,
		RefusedStale: after.RefusedStale - before.RefusedStale,
	}
	if after.Voids != nil {
		v := *after.Voids
		if before.Voids != nil {
			v -= *before.Voids
		}
		p.Voids = &v
	}
	return p
}

// overlaps is p's overlap count, 0 for a run without a provider.
func (p *paymentCounts) overlaps() int64 {
	if p == nil {
		return 0
	}
	return p.Overlaps
}

// refunds is p's refund count, 0 for a run without a provider.
func (p *paymentCounts) refunds() int64 {
	if p == nil {
		return 0
	}
	return p.Refunds
}

// balance judges the ledger against confirmed bookings.
func (p *paymentCounts) balance(confirmed int) {
	p.Confirmed = confirmed
	p.LedgerDiff = p.Charges - p.Refunds - int64(confirmed)
	p.LedgerOK = p.LedgerDiff == 0
	p.NotCharging = p.Charges == 0 && p.Refunds == 0 && confirmed > 0
}

// ledgerReads read, each as of now, what the ledger compares: the
// provider's counts and the number of bookings the run confirmed.
type ledgerReads struct {
	stats     func(context.Context) (providerStats, error)
	confirmed func(context.Context) (int, error)
	// notCharging says why the provider may have seen no charge at all;
	// empty means notCharging.
	notCharging string
}

// Why a provider may see no charge while bookings are confirmed.
const (
	notCharging     = "the APIs are not charging through this provider (is PAYMENT_URL set on them?)"
	notChargingHold = "the APIs are not charging through this provider (is PAYMENT_URL set on them, and do they charge when a hold is confirmed?)"
)

// settleLedger reads the provider's counts since before and the run's
// confirmed bookings until the ledger balances or wait has passed,
// 100 ms after the first read, then 200 ms, 400 ms, ... (at most 1 s)
// apart. A provider that saw no charge while bookings were confirmed is
// not waited for: the APIs do not charge through it, and never will.
func settleLedger(ctx context.Context, reads ledgerReads, before providerStats, wait time.Duration) (*paymentCounts, error) {
	began := time.Now()
	pause := 100 * time.Millisecond
	for polls := 1; ; polls++ {
		after, err := reads.stats(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the payment provider's counts: %w", err)
		}
		confirmed, err := reads.confirmed(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the confirmed bookings: %w", err)
		}
		p := since(before, after)
		p.balance(confirmed)
		waited := time.Since(began)
		if p.LedgerOK || p.NotCharging || waited+pause > wait {
			p.LedgerWaitS = waited.Seconds()
			if polls == 1 {
				waited = 0 // read once: nothing was waited for
			}
			p.Ledger = p.describe(waited, cmp.Or(reads.notCharging, notCharging))
			return p, nil
		}
		sleep(ctx, pause)
		pause = min(2*pause, time.Second)
	}
}

// describe says what the ledger shows, after waiting so long for it (0:
// read once); why is what to say when the provider saw no charge.
func (p *paymentCounts) describe(waited time.Duration, why string) string {
	s := fmt.Sprintf("charges %d − refunds %d = %d, confirmed bookings %d: ", p.Charges, p.Refunds, p.Charges-p.Refunds, p.Confirmed)
	after := ""
	if waited > 0 {
		after = fmt.Sprintf(" (after waiting %v)", waited.Round(time.Millisecond))
	}
	switch {
	case p.NotCharging:
		return s + why
	case p.LedgerOK:
		return s + "balanced" + after
	case p.LedgerDiff > 0:
		return s + plural(p.LedgerDiff, "charge") + " nobody booked or refunded" + after
	}
	return s + plural(-p.LedgerDiff, "confirmed booking") + " without a charge" + after
}

// confirmedBookings counts the bookings of the final seat map that were
// not there before the run: the run's own, whether their answers arrived
// or not (the provider charged for them either way).
func confirmedBookings(final, before seatMap) int {
	ids := map[string]bool{}
	for key, id := range final {
		switch {
		case id == "" || before[key] == id:
		case id == unnamedHolder:
			ids[unnamedHolder+key] = true // booked, by a booking the map does not name
		default:
			ids[id] = true
		}
	}
	return len(ids)
}
