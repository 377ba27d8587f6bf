package reservation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// HoldRequest is a request to hold seats: the Seats named, or the best
// Count seats available (side by side when Adjacent), as in BookRequest.
type HoldRequest struct {
	ScreeningID string
	Seats       []string
	Count       int
	Adjacent    bool
	Customer    string
	QueueToken  string // as in BookRequest
}

// HoldConfirmation is the answer to a new hold: the hold and its secret
// token, which confirms or releases it and is shown only here.
type HoldConfirmation struct {
	Hold  Hold
	Token string
}

// HoldSeats holds seats for a customer for the screening's HoldTTL, all or
// nothing. It runs the screening's lock strategy exactly as Book does, but
// its critical section is only the check and the write of the hold: the
// payment happens later, outside any lock, while the hold alone keeps the
// seats.
//
// It returns the errors of Book (without the idempotency ones), with
// ErrSeatHeld (a *SeatsHeldError) for seats someone else holds.
func (s *Service) HoldSeats(ctx context.Context, req HoldRequest) (HoldConfirmation, error) {
	sc, err := s.screeningFor(ctx, req.ScreeningID, req.QueueToken)
	if err != nil {
		return HoldConfirmation{}, err
	}
	best, err := bestRequest(req.Seats, req.Count, req.Adjacent)
	if err != nil {
		return HoldConfirmation{}, err
	}
	token, tokenHash, err := newToken()
	if err != nil {
		return HoldConfirmation{}, err
	}
	w := HoldWrite{
		Hold:      Hold{ID: uuid.NewString(), ScreeningID: sc.ID, Customer: req.Customer},
		TokenHash: tokenHash,
		TTL:       sc.HoldTTL,
	}
	var h Hold
	if best {
		h, err = s.holdBest(ctx, sc, req, w)
	} else {
		w.Hold.Seats, err = validateBooking(sc, BookRequest{Seats: req.Seats, Customer: req.Customer})
		if err == nil {
			h, err = s.holdSeats(ctx, sc, w, s.opts.LockWait)
		}
	}
	if err != nil {
		return HoldConfirmation{}, err
	}
	s.publishHold(ctx, EventHeld, h)
	return HoldConfirmation{Hold: h, Token: token}, nil
}

// holdSeats runs the critical section of a hold of w's seats under the
// screening's strategy: lock, check, write the hold with the lease's
// fences, release. It waits at most lockWait for the locks; 0 waits for
// none (best available), and a held one is then a *SeatsBusyError. Under
// LockPostgresXact the check and the write go through the transaction that
// holds the locks (see Tx).
func (s *Service) holdSeats(ctx context.Context, sc Screening, w HoldWrite, lockWait time.Duration) (Hold, error) {
	lock := s.lock
	if lockWait <= 0 {
		lock = s.tryLock
	}
	lease, err := lock(ctx, sc, w.Hold.Seats)
	if err != nil {
		return Hold{}, err
	}
	defer s.release(ctx, lease)
	if err := checkFree(ctx, s.storeOf(lease), sc.ID, w.Hold.Seats); err != nil {
		return Hold{}, err
	}
	w.Fences = make(map[string]int64, len(w.Hold.Seats))
	for _, seat := range w.Hold.Seats {
		if f := lease.Fence(seat); f != 0 {
			w.Fences[seat] = f
		}
	}
	if err := lockHeld(lease); err != nil {
		return Hold{}, err
	}
	var h Hold
	if tx := lease.Tx(); tx != nil {
		h, err = tx.CreateHold(ctx, w)
	} else {
		h, err = s.store.CreateHold(ctx, w)
	}
	if errors.Is(err, ErrStaleToken) {
		return Hold{}, s.staleRefusal(ctx, lease, err)
	}
	return h, err
}

// checkFree returns a *SeatsTakenError for the seats that are booked, else
// a *SeatsHeldError for those held by a live hold, else nil.
func checkFree(ctx context.Context, r Reader, screeningID string, seats []string) error {
	taken, held, err := r.SeatsInUse(ctx, screeningID, seats)
	switch {
	case err != nil:
		return err
	case len(taken) > 0:
		return &SeatsTakenError{Seats: taken}
	case len(held) > 0:
		return &SeatsHeldError{Seats: held}
	}
	return nil
}

// Hold returns a hold, without its token, or ErrNotFound.
func (s *Service) Hold(ctx context.Context, id string) (Hold, error) {
	if uuid.Validate(id) != nil {
		return Hold{}, ErrNotFound
	}
	h, _, err := s.store.Hold(ctx, id)
	return h, err
}

// ConfirmedHold is the answer to a confirm: the booking and its token, the
// hold as it was found, and whether this confirm made the booking (false
// for a repeat of an earlier confirm).
type ConfirmedHold struct {
	Confirmation
	Hold    Hold
	Created bool
}

// ConfirmHold turns a live hold into a booking, with the hold's token. No
// lock is taken: the hold keeps the seats, and the store makes the confirm
// atomic with respect to the hold's expiry, its release and another
// confirm. Created is false when the hold was confirmed before (by this
// request's earlier try, or a concurrent one): the answer is then that
// same booking again, with the same token.
//
// The booking's token is derived from the hold's, so that a repeat can
// answer it without the store keeping any secret; the store keeps only its
// hash, like every booking's.
//
// It returns ErrNotFound, ErrUnauthorized when the token is empty,
// ErrForbidden when it is wrong, ErrHoldExpired when the hold has expired,
// ErrConflict when it was released, ErrUnavailable, or ctx's error.
func (s *Service) ConfirmHold(ctx context.Context, id, token string) (ConfirmedHold, error) {
	h, err := s.authorizedHold(ctx, id, token, "confirming")
	if err != nil {
		return ConfirmedHold{}, err
	}
	bookingToken := bookingTokenOf(token)
	switch h.Status {
	case HoldConfirmed:
		return s.confirmed(ctx, h, bookingToken)
	case HoldReleased:
		return ConfirmedHold{}, &messageError{kind: ErrConflict, msg: "the hold was released; hold the seats again"}
	case HoldExpired:
		return ConfirmedHold{}, expired(h)
	}
	th := sha256.Sum256([]byte(bookingToken))
	b := Booking{
		ID:          uuid.NewString(),
		ScreeningID: h.ScreeningID,
		Seats:       h.Seats,
		Customer:    h.Customer,
		Status:      BookingConfirmed,
		CreatedAt:   s.opts.Now().UTC().Truncate(time.Microsecond),
	}
	w := Write{Booking: b, TokenHash: th[:], Guard: GuardFence}
	if s.opts.Payments != nil {
		err = s.confirmPaid(ctx, h, w)
	} else {
		err = s.store.ConfirmHold(ctx, h.ID, w)
	}
	switch {
	case err == nil:
		s.publish(ctx, EventBooked, b)
		return ConfirmedHold{Confirmation: Confirmation{Booking: b, Token: bookingToken}, Hold: h, Created: true}, nil
	case errors.Is(err, ErrHoldExpired):
		return ConfirmedHold{}, expired(h)
	case errors.Is(err, ErrConflict):
		// Another confirm of this hold won, or a release did: read which.
		now, _, rerr := s.store.Hold(ctx, h.ID)
		if rerr != nil {
			return ConfirmedHold{}, rerr
		}
		if now.Status == HoldConfirmed {
			return s.confirmed(ctx, now, bookingToken)
		}
		return ConfirmedHold{}, &messageError{kind: ErrConflict, msg: fmt.Sprintf("the hold is %s; hold the seats again", now.Status)}
	case errors.Is(err, ErrPaymentSettled):
		return ConfirmedHold{}, fmt.Errorf("the payment was settled before the hold could be confirmed, so nothing is owed; try again: %w", ErrUnavailable)
	default:
		return ConfirmedHold{}, err
	}
}

// confirmPaid charges for the hold h through the provider, then confirms
// it as the booking of w. The hold, not a lock, keeps the seats while the
// charge runs. As for a booking (chargeAndWrite), the payment is recorded
// before the charge, the work runs under a context of its own, and any
// outcome but the confirm settles the payment by its id: a hold that
// expired during the charge is refunded.
func (s *Service) confirmPaid(ctx context.Context, h Hold, w Write) error {
	sc, err := s.Screening(ctx, h.ScreeningID)
	if err != nil {
		return err
	}
	work, cancel := context.WithTimeout(context.WithoutCancel(ctx), sc.PaymentDelay+chargeSlack+writeTimeout)
	defer cancel()
	p := Payment{ID: uuid.NewString(), BookingID: w.Booking.ID, ScreeningID: sc.ID, Seats: h.Seats, Customer: h.Customer}
	if err := s.store.CreatePayment(work, p, paymentDue(sc.PaymentDelay)); err != nil {
		return err
	}
	w.PaymentID = p.ID
	w.ChargeID, err = s.charge(work, sc, p, noLease{})
	if err == nil {
		err = s.store.ConfirmHold(work, h.ID, w)
	}
	if err != nil && s.settle(work, p.ID) == PaymentBooked {
		return nil // the confirm committed after all (its answer was lost)
	}
	return err
}

// confirmed answers a confirm of a hold confirmed before: its booking.
func (s *Service) confirmed(ctx context.Context, h Hold, bookingToken string) (ConfirmedHold, error) {
	b, _, err := s.store.Booking(ctx, h.BookingID)
	if err != nil {
		return ConfirmedHold{}, err
	}
	return ConfirmedHold{Confirmation: Confirmation{Booking: b, Token: bookingToken}, Hold: h}, nil
}

func expired(h Hold) error {
	return &messageError{kind: ErrHoldExpired, msg: fmt.Sprintf("the hold expired at %s; its seats are free again", h.ExpiresAt.UTC().Format(time.RFC3339Nano))}
}

// ReleaseHold ends a hold before its expiry and frees its seats. Releasing
// a released or expired hold changes nothing. It returns ErrNotFound,
// ErrUnauthorized, ErrForbidden, ErrConflict when the hold was confirmed
// (cancel the booking instead), ErrUnavailable, or ctx's error.
//
// released reports whether this release freed the seats of a live hold.
func (s *Service) ReleaseHold(ctx context.Context, id, token string) (released bool, err error) {
	h, err := s.authorizedHold(ctx, id, token, "releasing")
	if err != nil {
		return false, err
	}
	before, err := s.store.ReleaseHold(ctx, h.ID)
	if errors.Is(err, ErrConflict) {
		return false, &messageError{kind: ErrConflict, msg: "the hold is confirmed; cancel its booking instead"}
	}
	if err != nil {
		return false, err
	}
	if before != HoldHeld {
		return false, nil
	}
	// Only the release that freed the seats tells anybody.
	s.publishHold(ctx, EventReleased, h)
	return true, nil
}

// authorizedHold reads a hold and checks the token against its hash.
func (s *Service) authorizedHold(ctx context.Context, id, token, doing string) (Hold, error) {
	if uuid.Validate(id) != nil {
		return Hold{}, ErrNotFound
	}
	h, hash, err := s.store.Hold(ctx, id)
	if err != nil {
		return Hold{}, err
	}
	if token == "" {
		return Hold{}, &messageError{kind: ErrUnauthorized, msg: doing + " needs the hold's token"}
	}
	if !tokenMatches(token, hash) {
		return Hold{}, &messageError{kind: ErrForbidden, msg: "the token does not match this hold"}
	}
	return h, nil
}

// bookingTokenOf derives the token of the booking a hold becomes from the
// hold's token. Knowing the hold's token gives the booking's (both are the
// customer's); the store's hash of the hold's token gives nothing.
func bookingTokenOf(holdToken string) string {
	sum := sha256.Sum256([]byte("seatlock booking of hold\x00" + holdToken))
	return hex.EncodeToString(sum[:])
}

// holdTTL returns the hold length of a new screening: ttl, or the
// service's default when nil; ErrInvalid outside MinHoldTTL to MaxHoldTTL.
func (s *Service) holdTTL(ttl *time.Duration) (time.Duration, error) {
	d := s.opts.DefaultHoldTTL
	if ttl != nil {
		d = *ttl
	}
	if d < MinHoldTTL || d > MaxHoldTTL {
		return 0, invalidf("hold_ttl_ms must be from %d to %d", MinHoldTTL.Milliseconds(), MaxHoldTTL.Milliseconds())
	}
	return d.Truncate(time.Millisecond), nil
}

// publishHold tells the event publisher of a hold's event.
func (s *Service) publishHold(ctx context.Context, kind EventKind, h Hold) {
	if s.opts.Events == nil {
		return
	}
	e := Event{Kind: kind, ScreeningID: h.ScreeningID, HoldID: h.ID, Seats: slices.Clone(h.Seats), At: s.opts.Now().UTC()}
	if kind == EventHeld {
		e.ExpiresAt = h.ExpiresAt
	}
	s.opts.Events.Publish(ctx, e)
}
