// The payment provider as the service sees it.

package reservation

import (
	"context"

	"time"
)

// Payments charges a customer for the seats of a booking. The charge runs
// inside the critical section, while the seat locks are held: it is the side
// effect the locks exist to protect. Two holders of one seat at once means
// two customers charged for one seat, even when the guarded write keeps the
// seat map right, and one of them has to be refunded.
//
// A charge cannot be rolled back with the booking's transaction, so the
// service records every payment (PaymentStore) before it charges, uses the
// record's id as the provider's idempotency key, and settles by that key
// whatever does not end in a booking (see Service.Reconcile).
//
// Without Payments the Service simulates the payment with a wait of the
// screening's payment delay, and records nothing: no money moves.
type Payments interface {
	// Charge charges for c under the idempotency key c.PaymentID: a repeat
	// with the same id charges nothing more and answers as the first did.
	// It returns a *StaleTokenError (ErrStaleToken) when the provider
	// refused a fencing token older than one it has seen for a seat and
	// said which fences it has seen, an error wrapping ErrLockLost when it
	// refused one without saying, ErrPaymentVoided
	// when the payment was voided (refunded by its id) before the charge
	// completed, ErrUnavailable when the provider cannot be reached or failed,
	// or an error wrapping ctx.Err().
	Charge(ctx context.Context, c Charge) (chargeID string, err error)

	// Refund settles the payment with the id: it gives back the charge made
	// under it, or, when none has completed, voids the id so that no charge
	// can complete under it later. refunded reports which: true when a
	// charge was given back (now or by an earlier call). Repeating it
	// changes nothing. It returns ErrUnavailable when the provider cannot
	// be reached or failed.
	Refund(ctx context.Context, paymentID string) (refunded bool, err error)
}

// Charge is what a booking pays for.
type Charge struct {
	// PaymentID is the id of the payment record written before the charge,
	// the provider's idempotency key.
	PaymentID   string
	BookingID   string
	ScreeningID string
	Seats       []string
	Customer    string
	// Fences are the fencing tokens of the seats' locks, for a provider
	// that checks them; seats whose strategy has none are absent.
	Fences map[string]int64
	// Delay is how long the provider takes to answer: the screening's
	// payment delay.
	Delay time.Duration
}
