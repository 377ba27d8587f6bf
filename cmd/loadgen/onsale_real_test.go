package main

import "testing"

// The onsale scenario against two instances of cmd/api on one Redis and
// one Postgres, charging through a payment provider: with and without the
// waiting room, the screening sells out to the seat, the ledger balances,
// and with the waiting room, whose buyers ask about their entries on both
// instances in turn, nobody is admitted before someone who joined earlier.
func TestOnSaleAgainstRealAPI(t *testing.T) {
	bin := buildAPI(t)
	provider := startProvider(t)
	targets := startTwoAPIs(t, bin, "PAYMENT_URL="+provider, "DB_MAX_CONNS=4")
	common := []string{"-targets", targets, "-scenario", "onsale", "-layout", "5x10", "-buyers", "300", "-spike", "500ms",
		"-hold-ttl", "1s", "-abandon", "0.2", "-payment-delay", "1ms", "-payments", provider}

	t.Run("without a waiting room", func(t *testing.T) {
		rep, err := runJSON(t, common...)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		checkSoldOut(t, rep, 50)
	})

	t.Run("with a waiting room", func(t *testing.T) {
		rep, err := runJSON(t, append(common, "-queue-rate", "100")...)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		o := checkSoldOut(t, rep, 50)
		if o.Joined != 300 || o.Admitted == 0 || o.Polls == 0 || o.FIFOInversions != 0 {
			t.Errorf("queue figures %+v: want every buyer in the queue, some admitted, no inversion", o)
		}
	})
}
