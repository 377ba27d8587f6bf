package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

var _ reservation.Store = (*Store)(nil)

// Store is an in-memory reservation.Store. Create it with New; it is safe
// for concurrent use.
type Store struct {
	// mu protects every field below. Each method holds it for its whole
	// body, so every method is atomic: Book's check of the seats and its
	// write of them happen with no other method in between, which is what
	// makes the guard correct. Readers share it (RLock); writers own it.
	//
	// Invariants while mu is not held:
	//   - every seat map and every booking belongs to a stored screening;
	//   - a seat's holder, when set, is a booking of that screening;
	//   - a confirmed booking holds only seats of its own Seats (under
	//     GuardOff it may have lost some to a later booking);
	//   - a seat's fence never decreases;
	//   - a seat has a holder or a hold, never both, and its hold, when
	//     set, is a stored hold of that screening (live or not: expiry is
	//     read from the clock, never written).
	mu         sync.RWMutex
	screenings map[string]reservation.Screening
	created    map[string]time.Time            // screening id → when it was created, by now
	order      []string                        // screening ids, oldest first
	position   map[string]int                  // screening id -> index in order
	seats      map[string]map[string]seatState // screening id → seat id → state
	bookings   map[string]*booking             // booking id → booking
	idem       map[idemKey]string              // (screening, key hash) → booking id
	holds      map[string]*hold                // hold id → hold
	payments   map[string]*payment             // payment id → payment
	// pendingKeys maps the idempotency key of each pending payment that
	// has one to the payment's id; paymentOf maps each booking written
	// with a payment to the payment's id.
	pendingKeys map[idemKey]string
	paymentOf   map[string]string

	now func() time.Time // the store's clock, which decides expiry
}

// seatState is what the store knows of one seat that was ever written.
type seatState struct {
	holder string // id of the booking that holds the seat; "" when free
	fence  int64  // highest fencing token ever written to the seat
	hold   string // id of the last hold written to the seat; "" when none
}

// booking is a stored booking with its secrets.
type booking struct {
	reservation.Booking
	tokenHash []byte
	idem      *reservation.IdempotencyRecord
}

type idemKey struct {
	screeningID string
	keyHash     string
}

// New returns an empty Store whose clock is time.Now.
func New() *Store { return NewWithClock(time.Now) }

// NewWithClock returns an empty Store that reads the time from now, the
// clock that decides when holds expire. Tests pass a clock they move.
func NewWithClock(now func() time.Time) *Store {
	return &Store{
		screenings:  make(map[string]reservation.Screening),
		created:     make(map[string]time.Time),
		position:    make(map[string]int),
		seats:       make(map[string]map[string]seatState),
		bookings:    make(map[string]*booking),
		idem:        make(map[idemKey]string),
		holds:       make(map[string]*hold),
		payments:    make(map[string]*payment),
		pendingKeys: make(map[idemKey]string),
		paymentOf:   make(map[string]string),
		now:         now,
	}
}

// CreateScreening stores a new screening. It returns reservation.ErrConflict
// if the id is taken.
func (s *Store) CreateScreening(ctx context.Context, sc reservation.Screening) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.screenings[sc.ID]; ok {
		return fmt.Errorf("memory: screening %q: %w", sc.ID, reservation.ErrConflict)
	}
	s.screenings[sc.ID] = sc
	s.created[sc.ID] = s.now()
	s.position[sc.ID] = len(s.order)
	s.order = append(s.order, sc.ID)
	return nil
}

// CountScreenings returns how many screenings start after since or were
// created after since, by the store's clock.
func (s *Store) CountScreenings(ctx context.Context, since time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for id, sc := range s.screenings {
		if sc.StartsAt.After(since) || s.created[id].After(since) {
			n++
		}
	}
	return n, nil
}

// Screening returns the screening with the id, or reservation.ErrNotFound.
func (s *Store) Screening(ctx context.Context, id string) (reservation.Screening, error) {
	if err := ctx.Err(); err != nil {
		return reservation.Screening{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sc, ok := s.screenings[id]
	if !ok {
		return reservation.Screening{}, fmt.Errorf("memory: screening %q: %w", id, reservation.ErrNotFound)
	}
	return sc, nil
}

// Screenings returns up to limit screenings in the order they were
// created, starting after the screening with the id after.
func (s *Store) Screenings(ctx context.Context, after string, limit int) ([]reservation.Screening, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	start := 0
	if after != "" {
		pos, ok := s.position[after]
		if !ok {
			return nil, fmt.Errorf("after is no cursor of this list: %w", reservation.ErrInvalid)
		}
		start = pos + 1
	}
	end := min(start+max(limit, 0), len(s.order))
	out := make([]reservation.Screening, 0, max(end-start, 0))
	for _, id := range s.order[min(start, end):end] {
		out = append(out, s.screenings[id])
	}
	return out, nil
}

// BookedSeats returns the booked seats of a screening, mapped to the id of
// the booking that holds each.
func (s *Store) BookedSeats(ctx context.Context, screeningID string) (map[string]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]string)
	for seat, st := range s.seats[screeningID] {
		if st.holder != "" {
			out[seat] = st.holder
		}
	}
	return out, nil
}

// DoubleBookedSeats returns the seats that more than one confirmed booking
// claims, each mapped to their ids, oldest first.
func (s *Store) DoubleBookedSeats(ctx context.Context, screeningID string) (map[string][]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var live []*booking
	for _, b := range s.bookings {
		if b.ScreeningID == screeningID && b.Status == reservation.BookingConfirmed {
			live = append(live, b)
		}
	}
	slices.SortFunc(live, func(a, b *booking) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	claims := make(map[string][]string)
	for _, b := range live {
		for _, seat := range b.Seats {
			claims[seat] = append(claims[seat], b.ID)
		}
	}
	maps.DeleteFunc(claims, func(_ string, ids []string) bool { return len(ids) < 2 })
	return claims, nil
}

// Book writes a confirmed booking and gives it its seats, all or nothing.
//
// With reservation.GuardFence every seat must be free and, when the write
// carries a fence for it, that fence must be greater than the seat's last
// one. When some seats are taken it returns a *reservation.SeatsTakenError
// naming them, in the order of the booking's seats, even if other seats are
// stale too; else, when a fence is stale, reservation.ErrStaleToken. With
// reservation.GuardOff the seats are given away whatever held them.
//
// It also returns reservation.ErrNotFound for an unknown screening,
// reservation.ErrConflict when the booking id or the idempotency key was used
// before, and reservation.ErrInvalid for a write no database would take (a
// booking id that is not a uuid, no seats or a seat twice, an unknown
// guard). Nothing is written when it fails.
func (s *Store) Book(ctx context.Context, w reservation.Write) error {
	paid, done, err := s.startWrite(ctx, w)
	if err != nil {
		return err
	}
	defer done()
	b := w.Booking
	if _, ok := s.screenings[b.ScreeningID]; !ok {
		return fmt.Errorf("memory: screening %q: %w", b.ScreeningID, reservation.ErrNotFound)
	}
	if _, ok := s.bookings[b.ID]; ok {
		return fmt.Errorf("memory: booking %s: %w", b.ID, reservation.ErrConflict)
	}
	var key idemKey
	if w.Idempotency != nil {
		key = idemKey{b.ScreeningID, string(w.Idempotency.KeyHash)}
		if _, ok := s.idem[key]; ok {
			return fmt.Errorf("memory: idempotency key: %w", reservation.ErrConflict)
		}
	}

	seats := s.seats[b.ScreeningID]
	if w.Guard == reservation.GuardFence {
		// The guard: check every seat before writing any. mu is held from
		// here to the end of the write, so what is checked is still true
		// when it is written.
		if err := s.guard(b.ScreeningID, b.Seats, w.Fences, ""); err != nil {
			return err
		}
	}

	if seats == nil {
		seats = make(map[string]seatState)
		s.seats[b.ScreeningID] = seats
	}
	for _, seat := range b.Seats {
		// A blind write (GuardOff) takes the seat from a hold too.
		seats[seat] = seatState{holder: b.ID, fence: max(seats[seat].fence, w.Fences[seat])}
	}
	s.addBooking(w)
	s.booked(paid, w.ChargeID)
	return nil
}

// addBooking stores w's booking as confirmed, with its idempotency record.
// s.mu must be held.
func (s *Store) addBooking(w reservation.Write) {
	b := w.Booking
	stored := &booking{Booking: copyBooking(b), tokenHash: slices.Clone(w.TokenHash)}
	stored.Status = reservation.BookingConfirmed
	if w.Idempotency != nil {
		rec := copyRecord(*w.Idempotency)
		rec.BookingID = b.ID
		stored.idem = &rec
		s.idem[idemKey{b.ScreeningID, string(rec.KeyHash)}] = b.ID
	}
	s.bookings[b.ID] = stored
}

// Booking returns the booking with the id and the hash of its token, or
// reservation.ErrNotFound.
func (s *Store) Booking(ctx context.Context, id string) (reservation.Booking, []byte, error) {
	if err := ctx.Err(); err != nil {
		return reservation.Booking{}, nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	b, ok := s.bookings[id]
	if !ok {
		return reservation.Booking{}, nil, fmt.Errorf("memory: booking %q: %w", id, reservation.ErrNotFound)
	}
	return copyBooking(b.Booking), slices.Clone(b.tokenHash), nil
}

// Cancel marks a booking cancelled and frees the seats it still holds; a
// seat that a later booking took over (under GuardOff) stays with that
// booking. Cancelling a cancelled booking changes nothing. It returns
// reservation.ErrNotFound if there is no such booking.
func (s *Store) Cancel(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bookings[id]
	if !ok {
		return fmt.Errorf("memory: booking %q: %w", id, reservation.ErrNotFound)
	}
	if b.Status == reservation.BookingConfirmed {
		s.owed(id)
	}
	b.Status = reservation.BookingCancelled
	seats := s.seats[b.ScreeningID]
	for _, seat := range b.Seats {
		if st := seats[seat]; st.holder == id {
			seats[seat] = seatState{fence: st.fence} // free, but keep the fence
		}
	}
	return nil
}

// Idempotent returns the record of the booking made with the key hash on
// the screening, or reservation.ErrNotFound.
func (s *Store) Idempotent(ctx context.Context, screeningID string, keyHash []byte) (reservation.IdempotencyRecord, error) {
	if err := ctx.Err(); err != nil {
		return reservation.IdempotencyRecord{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, ok := s.idem[idemKey{screeningID, string(keyHash)}]
	if !ok {
		return reservation.IdempotencyRecord{}, fmt.Errorf("memory: idempotency key: %w", reservation.ErrNotFound)
	}
	return copyRecord(*s.bookings[id].idem), nil
}

// Ping reports nil: memory is always there.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

func copyBooking(b reservation.Booking) reservation.Booking {
	b.Seats = slices.Clone(b.Seats)
	return b
}

func copyRecord(r reservation.IdempotencyRecord) reservation.IdempotencyRecord {
	r.KeyHash = slices.Clone(r.KeyHash)
	r.RequestHash = slices.Clone(r.RequestHash)
	r.SealedToken = slices.Clone(r.SealedToken)
	return r
}
