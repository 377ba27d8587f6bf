package reservation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// maxCachedScreenings bounds the screening cache; beyond it screenings are
// read from the store as if there were no cache.
const maxCachedScreenings = 4096

// screeningCache is a bounded map of immutable screenings by id.
type screeningCache struct {
	// mu protects m. Readers (every booking) share it; writers hold it
	// only to add one entry.
	mu sync.RWMutex
	m  map[string]Screening
}

func (c *screeningCache) get(id string) (Screening, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sc, ok := c.m[id]
	return sc, ok
}

func (c *screeningCache) put(sc Screening) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]Screening)
	}
	if len(c.m) < maxCachedScreenings {
		c.m[sc.ID] = sc
	}
}

// PlayedAfter is how long after its start a screening has surely played:
// longer than any film with its trailers. A screening counts toward
// Options.MaxScreenings until it has played and was created at least
// PlayedAfter ago (one created with a start in the past counts for
// PlayedAfter all the same, so that old dates do not slip past the
// bound).
const PlayedAfter = 6 * time.Hour

// MaxStartsAhead is how far ahead a screening may start. It bounds how
// long a screening holds its place in Options.MaxScreenings: every
// screening leaves it at most MaxStartsAhead + PlayedAfter after its
// creation.
const MaxStartsAhead = 366 * 24 * time.Hour

// NewScreening is a request to create a screening. Zero values take the
// service's defaults; PaymentDelay is a pointer so that an explicit 0 can be
// told from none.
type NewScreening struct {
	ID           string
	Movie        string
	StartsAt     time.Time
	Rows         int
	SeatsPerRow  int
	Lock         Strategy
	Guard        Guard
	PaymentDelay *time.Duration
	HoldTTL      *time.Duration // nil: the service's default
	Queue        QueueConfig    // zero: no waiting room
}

// CreateScreening validates and stores a new screening. It returns
// ErrInvalid for a bad request and ErrConflict when the id is taken.
func (s *Service) CreateScreening(ctx context.Context, req NewScreening) (Screening, error) {
	sc, err := s.screeningOf(req)
	if err != nil {
		return Screening{}, err
	}
	// A bound on growth, not an exact quota: instances creating at the
	// same moment may each see room for one more. A screening leaves it
	// once it has played and was created PlayedAfter ago, so the bound
	// clears by itself.
	n, err := s.store.CountScreenings(ctx, s.opts.Now().Add(-PlayedAfter))
	if err != nil {
		return Screening{}, err
	}
	if n >= s.opts.MaxScreenings {
		return Screening{}, errorf(ErrLimit, "this server holds its maximum of %d screenings that have not played yet; "+
			"no more can be created until some have played (%g hours after they start)", s.opts.MaxScreenings, PlayedAfter.Hours())
	}
	ttl, err := s.holdTTL(req.HoldTTL)
	if err != nil {
		return Screening{}, err
	}
	sc.HoldTTL = ttl
	if sc.Queue, err = validQueue(req.Queue); err != nil {
		return Screening{}, err
	}
	if err := s.store.CreateScreening(ctx, sc); err != nil {
		if errors.Is(err, ErrConflict) {
			return Screening{}, &messageError{kind: ErrConflict, msg: fmt.Sprintf("a screening with id %q exists", sc.ID)}
		}
		return Screening{}, err
	}
	return sc, nil
}

// screeningOf checks req and returns the screening it asks for, with the
// service's defaults filled in; everything but its hold TTL.
func (s *Service) screeningOf(req NewScreening) (Screening, error) {
	sc := Screening{
		ID:           req.ID,
		Movie:        req.Movie,
		StartsAt:     req.StartsAt,
		Rows:         req.Rows,
		SeatsPerRow:  req.SeatsPerRow,
		Lock:         req.Lock,
		Guard:        req.Guard,
		PaymentDelay: s.opts.DefaultPaymentDelay,
	}
	if sc.ID == "" {
		sc.ID = uuid.NewString()
	} else if err := validID(sc.ID); err != nil {
		return Screening{}, invalidf("id %s", err)
	}
	if err := validText(sc.Movie, MaxMovieLen); err != nil {
		return Screening{}, invalidf("movie %s", err)
	}
	now := s.opts.Now()
	if sc.StartsAt.IsZero() {
		sc.StartsAt = now
	}
	if sc.StartsAt.After(now.Add(MaxStartsAhead)) {
		return Screening{}, invalidf("starts_at must be at most %d days ahead", MaxStartsAhead/(24*time.Hour))
	}
	sc.StartsAt = sc.StartsAt.UTC().Truncate(time.Second)
	if sc.Rows < 1 || sc.Rows > MaxRows {
		return Screening{}, invalidf("rows must be from 1 to %d", MaxRows)
	}
	if sc.SeatsPerRow < 1 || sc.SeatsPerRow > MaxSeatsPerRow {
		return Screening{}, invalidf("seats_per_row must be from 1 to %d", MaxSeatsPerRow)
	}
	if sc.Lock == "" {
		sc.Lock = s.opts.DefaultLock
	}
	if sc.Guard == "" {
		sc.Guard = s.opts.DefaultGuard
	}
	if err := s.checkChoice(sc.Lock, sc.Guard); err != nil {
		return Screening{}, err
	}
	if req.PaymentDelay != nil {
		sc.PaymentDelay = *req.PaymentDelay
	}
	if sc.PaymentDelay < 0 || sc.PaymentDelay > MaxPaymentDelay {
		return Screening{}, invalidf("payment_delay_ms must be from 0 to %d", MaxPaymentDelay.Milliseconds())
	}
	sc.PaymentDelay = sc.PaymentDelay.Truncate(time.Millisecond)
	return sc, nil
}

// EnsureScreening creates the screening unless one with its id exists. It is
// how the service makes sure the demo screening is there at start-up.
func (s *Service) EnsureScreening(ctx context.Context, req NewScreening) error {
	// Looked up first: a full store must not stop an instance whose
	// screening is there already.
	if _, err := s.Screening(ctx, req.ID); err == nil {
		return nil
	}
	_, err := s.CreateScreening(ctx, req)
	if errors.Is(err, ErrConflict) {
		return nil
	}
	return err
}

// Screening returns a screening, or ErrNotFound.
func (s *Service) Screening(ctx context.Context, id string) (Screening, error) {
	// The cache first: only valid ids are ever put in it, so a booking
	// (which looks its screening up twice, in the handler and in Book)
	// does not check its id again.
	if sc, ok := s.screenings.get(id); ok {
		return sc, nil
	}
	if validID(id) != nil {
		return Screening{}, notFound("screening", id)
	}
	sc, err := s.store.Screening(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Screening{}, notFound("screening", id)
	}
	if err != nil {
		return Screening{}, err
	}
	s.screenings.put(sc)
	return sc, nil
}

// Bounds of one page of screenings.
const (
	DefaultScreeningPage = 100
	MaxScreeningPage     = 1000
)

// Screenings returns a page of at most limit screenings, oldest first,
// created after the screening with the id after ("" for the first page),
// and the id to pass as after for the next page, "" on the last page. A
// limit outside 1 to MaxScreeningPage, or an after naming no screening, is
// ErrInvalid.
func (s *Service) Screenings(ctx context.Context, after string, limit int) (page []Screening, next string, err error) {
	if limit < 1 || limit > MaxScreeningPage {
		return nil, "", errorf(ErrInvalid, "limit must be from 1 to %d", MaxScreeningPage)
	}
	// One more than asked says whether another page follows, without a
	// second query.
	// An id that no screening can have is no cursor either; it would only
	// trouble the store (Postgres refuses text that is not UTF-8).
	if after != "" && validID(after) != nil {
		return nil, "", invalidf("after is no cursor of this list")
	}
	page, err = s.store.Screenings(ctx, after, limit+1)
	if errors.Is(err, ErrInvalid) {
		return nil, "", invalidf("after is no cursor of this list")
	}
	if err != nil {
		return nil, "", err
	}
	if len(page) > limit {
		page = page[:limit]
		next = page[limit-1].ID
	}
	return page, next, nil
}

// Seats returns the seat map of a screening, row by row, or ErrNotFound.
func (s *Service) Seats(ctx context.Context, screeningID string) (Screening, []Seat, error) {
	sc, err := s.Screening(ctx, screeningID)
	if err != nil {
		return Screening{}, nil, err
	}
	booked, err := s.store.BookedSeats(ctx, sc.ID)
	if err != nil {
		return Screening{}, nil, err
	}
	double, err := s.store.DoubleBookedSeats(ctx, sc.ID)
	if err != nil {
		return Screening{}, nil, err
	}
	held, err := s.store.SeatHolds(ctx, sc.ID)
	if err != nil {
		return Screening{}, nil, err
	}
	seats := make([]Seat, 0, sc.Capacity())
	for r := range sc.Rows {
		for n := 1; n <= sc.SeatsPerRow; n++ {
			seat := Seat{ID: SeatID(r, n), Row: string(rune('A' + r)), Number: n, Status: SeatFree}
			if id, ok := booked[seat.ID]; ok {
				seat.Status, seat.BookingID = SeatBooked, id
			}
			if at, ok := held[seat.ID]; ok && seat.Status == SeatFree {
				seat.Status, seat.HoldExpiresAt = SeatHeld, at
			}
			seat.Bookings = double[seat.ID]
			seats = append(seats, seat)
		}
	}
	return sc, seats, nil
}
