package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

// payment is a stored payment. Its fields are protected by Store.mu; claim
// is held by whoever settles the payment, or books it, for the whole of
// that work: the provider's refund included, with mu released meanwhile.
// claim is always taken before mu, never while mu is held.
type payment struct {
	reservation.Payment
	claim sync.Mutex
}

// settleRetry is how long a payment whose settle failed waits before
// SettleDue tries it again.
const settleRetry = 5 * time.Second

func open(st reservation.PaymentStatus) bool {
	return st == reservation.PaymentPending || st == reservation.PaymentRefunding
}

// CreatePayment records p as pending, due after settleIn by the store's
// clock. See reservation.PaymentStore.
func (s *Store) CreatePayment(ctx context.Context, p reservation.Payment, settleIn time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.screenings[p.ScreeningID]; !ok {
		return fmt.Errorf("memory: screening %q: %w", p.ScreeningID, reservation.ErrNotFound)
	}
	if _, ok := s.payments[p.ID]; ok {
		return fmt.Errorf("memory: payment %s: %w", p.ID, reservation.ErrConflict)
	}
	key := idemKey{p.ScreeningID, string(p.KeyHash)}
	if p.KeyHash != nil {
		if _, ok := s.pendingKeys[key]; ok {
			return fmt.Errorf("memory: a pending payment has this idempotency key: %w", reservation.ErrConflict)
		}
		s.pendingKeys[key] = p.ID
	}
	p = copyPayment(p)
	p.Status = reservation.PaymentPending
	p.SettleAfter = s.now().Add(settleIn)
	s.payments[p.ID] = &payment{Payment: p}
	return nil
}

// PendingPayment returns the pending payment with the key hash on the
// screening. See reservation.PaymentStore.
func (s *Store) PendingPayment(ctx context.Context, screeningID string, keyHash []byte) (reservation.Payment, error) {
	if err := ctx.Err(); err != nil {
		return reservation.Payment{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.pendingKeys[idemKey{screeningID, string(keyHash)}]
	if !ok {
		return reservation.Payment{}, fmt.Errorf("memory: pending payment: %w", reservation.ErrNotFound)
	}
	return copyPayment(s.payments[id].Payment), nil
}

// SettlePayment settles the payment with the id if it is open, holding it
// meanwhile. See reservation.PaymentStore.
func (s *Store) SettlePayment(ctx context.Context, id string, settle reservation.SettleFunc) (reservation.Payment, error) {
	s.mu.RLock()
	p, ok := s.payments[id]
	s.mu.RUnlock()
	if !ok {
		return reservation.Payment{}, fmt.Errorf("memory: payment %q: %w", id, reservation.ErrNotFound)
	}
	p.claim.Lock()
	defer p.claim.Unlock()
	return s.settleClaimed(ctx, p, settle)
}

// SettleDue settles up to limit due payments, skipping those another
// caller holds. See reservation.PaymentStore.
func (s *Store) SettleDue(ctx context.Context, limit int, settle reservation.SettleFunc) (int, error) {
	var errs []error
	n := 0
	for _, p := range s.due() {
		if n == limit || ctx.Err() != nil {
			break
		}
		if !p.claim.TryLock() {
			continue // another caller is settling it
		}
		after, err := s.settleClaimed(ctx, p, settle)
		switch {
		case err != nil:
			errs = append(errs, err)
			s.mu.Lock()
			p.SettleAfter = s.now().Add(settleRetry)
			s.mu.Unlock()
		case !open(after.Status):
			n++
		}
		p.claim.Unlock()
	}
	return n, errors.Join(errs...)
}

// due returns the open payments whose SettleAfter has passed, oldest due
// first.
func (s *Store) due() []*payment {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	var due []*payment
	for _, p := range s.payments {
		if open(p.Status) && !p.SettleAfter.After(now) {
			due = append(due, p)
		}
	}
	slices.SortFunc(due, func(a, b *payment) int { return a.SettleAfter.Compare(b.SettleAfter) })
	return due
}

// settleClaimed settles p, whose claim the caller holds, if it is still
// open, and returns it as it stands after.
func (s *Store) settleClaimed(ctx context.Context, p *payment, settle reservation.SettleFunc) (reservation.Payment, error) {
	s.mu.RLock()
	cur := copyPayment(p.Payment)
	s.mu.RUnlock()
	if !open(cur.Status) {
		return cur, nil
	}
	status, err := settle(ctx, cur)
	if err != nil {
		return cur, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStatus(p, status)
	return copyPayment(p.Payment), nil
}

// setStatus moves p to status, keeping the index of pending keys. s.mu
// must be held.
func (s *Store) setStatus(p *payment, status reservation.PaymentStatus) {
	if p.Status == reservation.PaymentPending && p.KeyHash != nil {
		delete(s.pendingKeys, idemKey{p.ScreeningID, string(p.KeyHash)})
	}
	p.Status = status
}

// claimPayment holds the payment a write names, if any, so that no settle
// runs while the write decides it, and returns what releases it. It is
// called before s.mu is taken.
func (s *Store) claimPayment(w reservation.Write) (release func()) {
	if w.PaymentID == "" {
		return func() {}
	}
	s.mu.RLock()
	p, ok := s.payments[w.PaymentID]
	s.mu.RUnlock()
	if !ok {
		return func() {}
	}
	p.claim.Lock()
	return p.claim.Unlock
}

// pendingFor returns the payment a write names, when it has one, after
// checking that it is pending and for w's booking; else
// ErrPaymentSettled. s.mu must be held, and the payment's claim.
func (s *Store) pendingFor(w reservation.Write) (*payment, error) {
	if w.PaymentID == "" {
		return nil, nil
	}
	p, ok := s.payments[w.PaymentID]
	if !ok || p.Status != reservation.PaymentPending || p.BookingID != w.Booking.ID {
		return nil, fmt.Errorf("memory: payment %s: %w", w.PaymentID, reservation.ErrPaymentSettled)
	}
	return p, nil
}

// booked marks p, when not nil, as paying for the booking just written.
// s.mu must be held.
func (s *Store) booked(p *payment, chargeID string) {
	if p != nil {
		s.setStatus(p, reservation.PaymentBooked)
		p.ChargeID = chargeID
		s.paymentOf[p.BookingID] = p.ID
	}
}

// owed makes the payment of a cancelled booking due for a refund at once.
// s.mu must be held.
func (s *Store) owed(bookingID string) {
	if p, ok := s.payments[s.paymentOf[bookingID]]; ok && p.Status == reservation.PaymentBooked {
		p.Status = reservation.PaymentRefunding
		p.SettleAfter = s.now()
	}
}

func copyPayment(p reservation.Payment) reservation.Payment {
	p.Seats = slices.Clone(p.Seats)
	p.Fences = maps.Clone(p.Fences)
	p.KeyHash = slices.Clone(p.KeyHash)
	return p
}

// startWrite begins a write of w (a booking, or a hold's confirmation): it
// checks ctx and w, claims w's payment, then takes the store's mutex, and
// returns w's pending payment, if any. done gives the mutex back, then the
// claim; when err is not nil, both are given back already.
func (s *Store) startWrite(ctx context.Context, w reservation.Write) (paid *payment, done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, nil, err
	}
	release := s.claimPayment(w)
	s.mu.Lock()
	done = func() {
		s.mu.Unlock()
		release()
	}
	if paid, err = s.pendingFor(w); err != nil {
		done()
		return nil, nil, err
	}
	return paid, done, nil
}
