package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// PaymentStatus is where a payment stands.
type PaymentStatus string

// The statuses of a payment. Pending and refunding are open: the
// reconciler settles them. The others are final.
const (
	// PaymentPending: recorded before its charge was sent. The charge may
	// be in flight, done, or never sent (the process died).
	PaymentPending PaymentStatus = "pending"
	// PaymentBooked: kept, for the booking written in the same transaction.
	PaymentBooked PaymentStatus = "booked"
	// PaymentRefunding: owed back, because its booking was cancelled.
	PaymentRefunding PaymentStatus = "refunding"
	// PaymentRefunded: a charge made under it was given back.
	PaymentRefunded PaymentStatus = "refunded"
	// PaymentVoided: no charge completed under it, and none ever can.
	PaymentVoided PaymentStatus = "voided"
)

// Payment is the record of a charge, written before the charge is sent.
type Payment struct {
	// ID is the provider's idempotency key for the charge.
	ID string
	// BookingID is the booking the payment is for; the booking exists only
	// if the payment is PaymentBooked (or was, before a cancel).
	BookingID   string
	ScreeningID string
	Seats       []string
	Customer    string
	Fences      map[string]int64
	// KeyHash is the hash of the booking request's Idempotency-Key, nil
	// without one: a retry of the request finds the payment by it.
	KeyHash []byte
	Status  PaymentStatus
	// ChargeID is the provider's id of the charge, once a booking kept it.
	ChargeID string
	// SettleAfter is when the reconciler may settle the payment if it is
	// still open, by the store's clock.
	SettleAfter time.Time
}

// SettleFunc settles an open payment with the provider and returns its
// final status, PaymentRefunded or PaymentVoided. A store calls it while it
// holds the payment, so that nothing else settles or books it meanwhile.
type SettleFunc func(ctx context.Context, p Payment) (PaymentStatus, error)

// PaymentStore is the part of a Store that keeps payments. A write that
// names a payment (Write.PaymentID) books it in the write's own
// transaction; every other way out of PaymentPending goes through
// SettlePayment or SettleDue, which hold the payment while its settle runs,
// so that a booking and a refund of one payment can never both happen.
type PaymentStore interface {
	// CreatePayment records p as PaymentPending, due for settling once
	// settleIn has passed on the store's clock. It returns ErrConflict when
	// p.ID is taken, or when p has a KeyHash and a pending payment with the
	// same KeyHash exists on the screening; ErrNotFound for an unknown
	// screening.
	CreatePayment(ctx context.Context, p Payment, settleIn time.Duration) error

	// PendingPayment returns the pending payment with the idempotency key
	// hash on the screening, or ErrNotFound.
	PendingPayment(ctx context.Context, screeningID string, keyHash []byte) (Payment, error)

	// SettlePayment holds the payment with the id, waiting while someone
	// else holds it, and, when it is still open (pending or refunding),
	// calls settle and writes the status it returns. It returns the
	// payment as it stands after: PaymentBooked tells that its booking was
	// written. It returns ErrNotFound for an unknown id, or settle's error
	// (the payment stays open then).
	SettlePayment(ctx context.Context, id string, settle SettleFunc) (Payment, error)

	// SettleDue settles up to limit open payments whose SettleAfter has
	// passed, oldest due first, each as SettlePayment does, but skipping
	// those someone else holds: several instances may run it at once. A
	// payment whose settle fails stays open and is tried again after a
	// while. It returns how many it settled, and the settle errors joined.
	SettleDue(ctx context.Context, limit int, settle SettleFunc) (int, error)
}

// Timings of a paid booking. A charge may take the payment delay plus
// chargeSlack before it is given up; the booking's write may take
// writeTimeout after that. A payment still open after both, and a margin,
// is settled by the reconciler.
const (
	chargeSlack  = 5 * time.Second
	writeTimeout = 5 * time.Second
	settleMargin = 2 * time.Second
)

// paymentDue is how long after it was recorded a payment of a screening
// with the payment delay may still be open before the reconciler settles
// it: by then the booking that made it has written, or given up.
func paymentDue(delay time.Duration) time.Duration {
	return delay + chargeSlack + writeTimeout + settleMargin
}

// PaymentsSettleWithin bounds how long, at most, the money of a booking
// with the payment delay stays unsettled when the process that charged it
// dies or stops: the payment comes due, and the next pass of a reconciler
// on any instance refunds or voids it.
func PaymentsSettleWithin(delay, reconcileEvery time.Duration) time.Duration {
	return paymentDue(delay) + reconcileEvery
}

// chargeAndWrite pays for a booking through the provider and writes it.
// The payment is recorded first; from then on the work belongs to the
// service, not to the client's connection (a hang-up must not leave a
// charge half-known), so it runs under a context of its own with a
// deadline. Any outcome but a written booking settles the payment at once
// by its id; if even that fails, the reconciler does it later.
func (s *Service) chargeAndWrite(ctx context.Context, store bookingStore, sc Screening, seats []string, customer string, lease SeatLease, idem *idempotency) (Confirmation, error) {
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), sc.PaymentDelay+chargeSlack+writeTimeout)
	defer cancel()
	p, err := s.openPayment(work, sc, seats, customer, lease, idem)
	if err != nil {
		return Confirmation{}, err
	}
	w, c, err := s.newWrite(sc, p.BookingID, seats, customer, lease, idem)
	if err == nil {
		w.PaymentID = p.ID
		w.ChargeID, err = s.charge(work, sc, p, lease)
	}
	if err == nil {
		err = store.Book(work, w)
	}
	if err != nil && s.settle(work, p.ID) == PaymentBooked {
		err = nil // the write committed after all (its answer was lost)
	}
	return s.written(work, sc.ID, c, idem, lease, err)
}

// openPayment records the payment of a booking before its charge, or finds
// the pending one that an earlier attempt of the same request (the same
// Idempotency-Key) recorded: charging under its id again charges nothing
// more, and the booking keeps that attempt's booking id.
func (s *Service) openPayment(ctx context.Context, sc Screening, seats []string, customer string, lease SeatLease, idem *idempotency) (Payment, error) {
	p := Payment{
		ID:          uuid.NewString(),
		BookingID:   uuid.NewString(),
		ScreeningID: sc.ID,
		Seats:       seats,
		Customer:    customer,
		Fences:      fencesOf(lease, seats),
	}
	if idem == nil {
		return p, s.store.CreatePayment(ctx, p, paymentDue(sc.PaymentDelay))
	}
	p.KeyHash = idem.keyHash
	prev, err := s.store.PendingPayment(ctx, sc.ID, idem.keyHash)
	if !errors.Is(err, ErrNotFound) {
		return prev, err
	}
	err = s.store.CreatePayment(ctx, p, paymentDue(sc.PaymentDelay))
	if errors.Is(err, ErrConflict) {
		// An attempt of the same request recorded its payment meanwhile.
		return s.store.PendingPayment(ctx, sc.ID, idem.keyHash)
	}
	return p, err
}

// charge asks the provider to charge for the payment p while lease holds
// its seats, and returns the charge id. The charge is cancelled when the
// lock is lost: a holder that is no longer the holder must not go on
// paying (its payment is then settled by its id, which voids a charge
// still in progress at the provider).
func (s *Service) charge(ctx context.Context, sc Screening, p Payment, lease SeatLease) (string, error) {
	if err := lockHeld(lease); err != nil {
		return "", err
	}
	held, stop := whileHeld(ctx, lease)
	id, err := s.opts.Payments.Charge(held, Charge{
		PaymentID:   p.ID,
		BookingID:   p.BookingID,
		ScreeningID: sc.ID,
		Seats:       p.Seats,
		Customer:    p.Customer,
		Fences:      fencesOf(lease, p.Seats),
		Delay:       sc.PaymentDelay,
	})
	lost := stop()
	switch {
	case lost:
		return "", errorf(ErrLockLost, "seat lock lost during payment")
	case err == nil:
		return id, lockHeld(lease)
	case errors.Is(err, ErrLockLost), errors.Is(err, ErrUnavailable):
		return "", err
	case errors.Is(err, ErrStaleToken):
		// The provider refused a fence, and said what it has seen: the
		// booking answers it as a refused write (see staleRefusal).
		return "", err
	case errors.Is(err, ErrPaymentVoided):
		return "", fmt.Errorf("the payment was settled before its charge completed, nothing was charged: %w", ErrUnavailable)
	default:
		return "", fmt.Errorf("payment: %w: %w", ErrUnavailable, err)
	}
}

// settleTimeout bounds a settle the service runs itself, provider call
// included, and settleAttempt each try of it: a try stuck on a connection
// the network dropped gives way to the next.
const (
	settleTimeout = 10 * time.Second
	settleAttempt = 3 * time.Second
)

// settle settles the payment with the id at once, as the reconciler would:
// unless its booking was written, the charge made under it is refunded or
// voided. It returns the payment's status after; PaymentPending when the
// store or the provider could not be reached, which leaves the payment to
// the reconciler.
//
// A store that fails to answer (out of reach, a connection broken under
// the query) is tried again, for up to settleTimeout: after a write in
// doubt, the payment is what tells the client whether it has a booking.
// A provider out of reach is not: the reconciler tries later.
func (s *Service) settle(ctx context.Context, id string) PaymentStatus {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		asked := false // the provider was asked: the store answered
		attempt, cancelAttempt := context.WithTimeout(ctx, settleAttempt)
		p, err := s.store.SettlePayment(attempt, id, func(ctx context.Context, p Payment) (PaymentStatus, error) {
			asked = true
			return s.refund(ctx, p)
		})
		cancelAttempt()
		if err == nil {
			return p.Status
		}
		if asked || errors.Is(err, ErrNotFound) || sleep(ctx, pause) != nil {
			s.opts.Logger.Warn("settling a payment: left to the reconciler", "payment_id", id, "err", err)
			return PaymentPending
		}
	}
}

// refund is the SettleFunc of the service: it refunds or voids the payment
// by its id at the provider.
func (s *Service) refund(ctx context.Context, p Payment) (PaymentStatus, error) {
	refunded, err := s.opts.Payments.Refund(ctx, p.ID)
	switch {
	case err != nil:
		return "", err
	case refunded:
		return PaymentRefunded, nil
	default:
		return PaymentVoided, nil
	}
}
