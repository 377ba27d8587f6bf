package payment_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
)

// client returns a Client of a new Provider served until t ends, and the
// provider.
func client(t *testing.T) (*payment.Client, *payment.Provider) {
	t.Helper()
	p, url := serve(t, payment.ProviderOptions{})
	c, err := payment.NewClient(url, payment.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// testContext is a context that ends with t, and after 10s at most.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func seat(paymentID string) reservation.Charge {
	return reservation.Charge{PaymentID: paymentID, BookingID: "b", ScreeningID: "s", Seats: []string{"A1"}, Customer: "c"}
}

func TestClientChargesUnderThePaymentID(t *testing.T) {
	c, p := client(t)
	ctx := testContext(t)
	first, err := c.Charge(ctx, seat("pay_1"))
	if err != nil {
		t.Fatal(err)
	}
	repeat, err := c.Charge(ctx, seat("pay_1"))
	if err != nil || repeat != first {
		t.Errorf("a repeat of pay_1 got %q, %v; want the first's %q", repeat, err, first)
	}
	checkStats(t, p, payment.Stats{Charges: 1, MaxConcurrent: 1})
}

func TestClientRefund(t *testing.T) {
	t.Run("a charged payment is refunded", func(t *testing.T) {
		c, p := client(t)
		ctx := testContext(t)
		if _, err := c.Charge(ctx, seat("pay_1")); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if refunded, err := c.Refund(ctx, "pay_1"); err != nil || !refunded {
				t.Errorf("refund %d of a charged payment: %v, %v; want true", i+1, refunded, err)
			}
		}
		checkStats(t, p, payment.Stats{Charges: 1, Refunds: 1, MaxConcurrent: 1})
	})
	t.Run("a payment refunded before its charge is voided", func(t *testing.T) {
		c, p := client(t)
		ctx := testContext(t)
		if refunded, err := c.Refund(ctx, "pay_1"); err != nil || refunded {
			t.Fatalf("refund of an uncharged payment: %v, %v; want false (voided)", refunded, err)
		}
		if _, err := c.Charge(ctx, seat("pay_1")); !errors.Is(err, reservation.ErrPaymentVoided) {
			t.Errorf("charge of a voided payment: %v, want ErrPaymentVoided", err)
		}
		checkStats(t, p, payment.Stats{Voids: 1})
	})
}
