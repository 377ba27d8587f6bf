package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

// hold is a stored hold with the hash of its token. Its status is one of
// held, confirmed and released; expiry is never written, only read from
// the clock (see live).
type hold struct {
	reservation.Hold
	tokenHash []byte
}

// live reports whether the hold with the id keeps its seats at this moment
// by the store's clock. s.mu must be held.
func (s *Store) live(id string) bool {
	h, ok := s.holds[id]
	return ok && h.Status == reservation.HoldHeld && s.now().Before(h.ExpiresAt)
}

// guard is the check of a guarded write, made with s.mu held so that it is
// still true when the caller writes: every seat must be unbooked (else
// *SeatsTakenError), not held by a live hold other than own (else
// *SeatsHeldError), and its fence, when given, newer than the seat's
// (else a *StaleTokenError with the fences the free seats have seen). The
// errors come in that order of precedence.
func (s *Store) guard(screeningID string, seats []string, fences map[string]int64, own string) error {
	var taken, held []string
	seen := make(map[string]int64, len(seats)) // of the free seats
	stale := false
	for _, seat := range seats {
		st := s.seats[screeningID][seat]
		switch fence := fences[seat]; {
		case st.holder != "":
			taken = append(taken, seat)
		case st.hold != "" && st.hold != own && s.live(st.hold):
			held = append(held, seat)
		default:
			seen[seat] = st.fence
			stale = stale || fence != 0 && fence <= st.fence
		}
	}
	switch {
	case len(taken) > 0:
		return &reservation.SeatsTakenError{Seats: taken}
	case len(held) > 0:
		return &reservation.SeatsHeldError{Seats: held}
	case stale:
		return fmt.Errorf("memory: %w", &reservation.StaleTokenError{Seen: seen})
	}
	return nil
}

// CreateHold records a new live hold on the seats, all or nothing, with
// its expiry at the store's now plus w.TTL. See reservation.HoldStore.
func (s *Store) CreateHold(ctx context.Context, w reservation.HoldWrite) (reservation.Hold, error) {
	if err := ctx.Err(); err != nil {
		return reservation.Hold{}, err
	}
	if err := w.Validate(); err != nil {
		return reservation.Hold{}, err
	}
	h := w.Hold
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.screenings[h.ScreeningID]; !ok {
		return reservation.Hold{}, fmt.Errorf("memory: screening %q: %w", h.ScreeningID, reservation.ErrNotFound)
	}
	if _, ok := s.holds[h.ID]; ok {
		return reservation.Hold{}, fmt.Errorf("memory: hold %s: %w", h.ID, reservation.ErrConflict)
	}
	if err := s.guard(h.ScreeningID, h.Seats, w.Fences, ""); err != nil {
		return reservation.Hold{}, err
	}
	seats := s.seats[h.ScreeningID]
	if seats == nil {
		seats = make(map[string]seatState)
		s.seats[h.ScreeningID] = seats
	}
	for _, seat := range h.Seats {
		seats[seat] = seatState{hold: h.ID, fence: max(seats[seat].fence, w.Fences[seat])}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	h.Seats = slices.Clone(h.Seats)
	h.Status = reservation.HoldHeld
	h.CreatedAt = now
	h.ExpiresAt = now.Add(w.TTL)
	h.BookingID = ""
	s.holds[h.ID] = &hold{Hold: h, tokenHash: slices.Clone(w.TokenHash)}
	return copyHold(h), nil
}

// Hold returns the hold with the id and the hash of its token, or
// reservation.ErrNotFound; a held hold past its expiry is HoldExpired.
func (s *Store) Hold(ctx context.Context, id string) (reservation.Hold, []byte, error) {
	if err := ctx.Err(); err != nil {
		return reservation.Hold{}, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	h, ok := s.holds[id]
	if !ok {
		return reservation.Hold{}, nil, fmt.Errorf("memory: hold %q: %w", id, reservation.ErrNotFound)
	}
	out := copyHold(h.Hold)
	if out.Status == reservation.HoldHeld && !s.live(id) {
		out.Status = reservation.HoldExpired
	}
	return out, slices.Clone(h.tokenHash), nil
}

// ConfirmHold turns a live hold into the booking w; the store's mutex makes
// the check of the hold's expiry and status and the write one step. See
// reservation.HoldStore.
func (s *Store) ConfirmHold(ctx context.Context, holdID string, w reservation.Write) error {
	paid, done, err := s.startWrite(ctx, w)
	if err != nil {
		return err
	}
	defer done()
	b := w.Booking
	h, ok := s.holds[holdID]
	switch {
	case !ok:
		return fmt.Errorf("memory: hold %q: %w", holdID, reservation.ErrNotFound)
	case h.Status != reservation.HoldHeld:
		return fmt.Errorf("memory: hold %s is %s: %w", holdID, h.Status, reservation.ErrConflict)
	case !s.live(holdID):
		return fmt.Errorf("memory: hold %s: %w", holdID, reservation.ErrHoldExpired)
	case b.ScreeningID != h.ScreeningID || !slices.Equal(b.Seats, h.Seats):
		return fmt.Errorf("memory: the booking is not for the seats of hold %s: %w", holdID, reservation.ErrInvalid)
	}
	if _, ok := s.bookings[b.ID]; ok {
		return fmt.Errorf("memory: booking %s: %w", b.ID, reservation.ErrConflict)
	}
	seats := s.seats[h.ScreeningID]
	for _, seat := range h.Seats {
		if st := seats[seat]; st.holder != "" || st.hold != holdID {
			// Only a blind write (GuardOff) takes a seat from a live hold.
			return fmt.Errorf("memory: hold %s lost seat %s to a blind write: %w", holdID, seat, reservation.ErrConflict)
		}
	}
	for _, seat := range h.Seats {
		seats[seat] = seatState{holder: b.ID, fence: seats[seat].fence}
	}
	s.addBooking(w)
	s.booked(paid, w.ChargeID)
	h.Status = reservation.HoldConfirmed
	h.BookingID = b.ID
	return nil
}

// ReleaseHold ends a hold and frees the seats it still holds. See
// reservation.HoldStore.
func (s *Store) ReleaseHold(ctx context.Context, id string) (reservation.HoldStatus, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.holds[id]
	if !ok {
		return "", fmt.Errorf("memory: hold %q: %w", id, reservation.ErrNotFound)
	}
	switch {
	case h.Status == reservation.HoldConfirmed:
		return h.Status, fmt.Errorf("memory: hold %s is confirmed: %w", id, reservation.ErrConflict)
	case h.Status == reservation.HoldReleased:
		return h.Status, nil
	case !s.live(id):
		return reservation.HoldExpired, nil
	}
	h.Status = reservation.HoldReleased
	seats := s.seats[h.ScreeningID]
	for _, seat := range h.Seats {
		if st := seats[seat]; st.hold == id {
			seats[seat] = seatState{fence: st.fence}
		}
	}
	return reservation.HoldHeld, nil
}

// SeatsInUse returns which of the given seats are booked and which are
// held by a live hold, each in the order given.
func (s *Store) SeatsInUse(ctx context.Context, screeningID string, seats []string) (taken, held []string, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, seat := range seats {
		switch st := s.seats[screeningID][seat]; {
		case st.holder != "":
			taken = append(taken, seat)
		case st.hold != "" && s.live(st.hold):
			held = append(held, seat)
		}
	}
	return taken, held, nil
}

// SeatHolds returns the seats of a screening held by a live hold, each
// mapped to its hold's expiry.
func (s *Store) SeatHolds(ctx context.Context, screeningID string) (map[string]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]time.Time)
	for seat, st := range s.seats[screeningID] {
		if st.hold != "" && s.live(st.hold) {
			out[seat] = s.holds[st.hold].ExpiresAt
		}
	}
	return out, nil
}

func copyHold(h reservation.Hold) reservation.Hold {
	h.Seats = slices.Clone(h.Seats)
	return h
}
