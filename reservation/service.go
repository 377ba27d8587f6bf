package reservation

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Options configure a Service. The zero value works, but offers no lock
// strategy other than LockNone in demo mode.
type Options struct {
	// Lockers maps each strategy the service offers to the locker that
	// implements it. LockNone needs no entry.
	Lockers map[Strategy]SeatLocker

	// DefaultLock and DefaultGuard apply to screenings created without a
	// lock or guard. Zero values mean LockKeyedRedis and GuardFence.
	DefaultLock  Strategy
	DefaultGuard Guard

	// DefaultPaymentDelay applies to screenings created without one.
	DefaultPaymentDelay time.Duration

	// Payments, when set, is the payment provider a booking charges inside
	// its critical section (taking the screening's payment delay to
	// answer). Nil means a simulated payment: a wait of the payment delay.
	Payments Payments

	// LockWait is the longest a booking waits for its seat locks before it
	// fails with ErrSeatBusy. Zero means 5s.
	LockWait time.Duration

	// Demo allows the unsafe choices LockNone and GuardOff.
	Demo bool

	// LockHealth, when set, reports whether the lock backend answers; Ready
	// calls it.
	LockHealth func(context.Context) error

	// Logger receives warnings (lost locks, failed releases). Nil discards.
	Logger *slog.Logger

	// Events, when set, is told of every booking and cancellation written
	// (see EventPublisher); the live seat map is fed from it.
	Events EventPublisher

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Service is the booking service: it validates requests, takes the locks of
// a screening's strategy, checks and writes seats through the store.
type Service struct {
	store Store
	opts  Options

	// screenings caches the screenings found in the store, so that a
	// booking does not read its screening again on every request: one
	// round trip fewer per booking. It is safe because a screening never
	// changes once created (Store has no method that updates or deletes
	// one), so a cached copy can never be stale. Unknown ids are not
	// cached: another instance may create that screening later.
	screenings screeningCache
}

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

// NewService returns a Service over the store.
func NewService(store Store, opts Options) *Service {
	if opts.DefaultLock == "" {
		opts.DefaultLock = LockKeyedRedis
	}
	if opts.DefaultGuard == "" {
		opts.DefaultGuard = GuardFence
	}
	if opts.LockWait <= 0 {
		opts.LockWait = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: store, opts: opts}
}

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
}

// CreateScreening validates and stores a new screening. It returns
// ErrInvalid for a bad request and ErrConflict when the id is taken.
func (s *Service) CreateScreening(ctx context.Context, req NewScreening) (Screening, error) {
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
	if sc.StartsAt.IsZero() {
		sc.StartsAt = s.opts.Now()
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
	if err := s.store.CreateScreening(ctx, sc); err != nil {
		if errors.Is(err, ErrConflict) {
			return Screening{}, &messageError{kind: ErrConflict, msg: fmt.Sprintf("a screening with id %q exists", sc.ID)}
		}
		return Screening{}, err
	}
	return sc, nil
}

// checkChoice reports whether the service offers the strategy and guard.
func (s *Service) checkChoice(l Strategy, g Guard) error {
	if g != GuardFence && g != GuardOff {
		return invalidf("guard %q is unknown; use %q or %q", clip(string(g)), GuardFence, GuardOff)
	}
	if l != LockNone && !s.offers(l) {
		return invalidf("lock %q is not offered by this server; offered: %s", clip(string(l)), strings.Join(s.Strategies(), ", "))
	}
	if unsafeChoice(l, g) && !s.opts.Demo {
		return invalidf("lock %q with guard %q can double-book and is allowed only in demo mode (DEMO_MODE=true)", l, g)
	}
	return nil
}

// offers reports whether the service can protect seats with strategy l:
// it has a locker for it, or, for LockPostgresXact, its store is a TxBooker.
func (s *Service) offers(l Strategy) bool {
	if l == LockPostgresXact {
		_, ok := s.store.(TxBooker)
		return ok
	}
	_, ok := s.opts.Lockers[l]
	return ok
}

// Strategies returns the lock strategies the service offers, sorted.
func (s *Service) Strategies() []string {
	var names []string
	if s.opts.Demo {
		names = append(names, string(LockNone))
	}
	for l := range s.opts.Lockers {
		names = append(names, string(l))
	}
	if _, ok := s.store.(TxBooker); ok && !slices.Contains(names, string(LockPostgresXact)) {
		names = append(names, string(LockPostgresXact))
	}
	slices.Sort(names)
	return names
}

// EnsureScreening creates the screening unless one with its id exists. It is
// how the service makes sure the demo screening is there at start-up.
func (s *Service) EnsureScreening(ctx context.Context, req NewScreening) error {
	_, err := s.CreateScreening(ctx, req)
	if errors.Is(err, ErrConflict) {
		return nil
	}
	return err
}

// Screening returns a screening, or ErrNotFound.
func (s *Service) Screening(ctx context.Context, id string) (Screening, error) {
	if validID(id) != nil {
		return Screening{}, ErrNotFound
	}
	if sc, ok := s.screenings.get(id); ok {
		return sc, nil
	}
	sc, err := s.store.Screening(ctx, id)
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
		return nil, "", fmt.Errorf("limit must be from 1 to %d: %w", MaxScreeningPage, ErrInvalid)
	}
	// One more than asked says whether another page follows, without a
	// second query.
	page, err = s.store.Screenings(ctx, after, limit+1)
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
	seats := make([]Seat, 0, sc.Capacity())
	for r := range sc.Rows {
		for n := 1; n <= sc.SeatsPerRow; n++ {
			seat := Seat{ID: SeatID(r, n), Row: string(rune('A' + r)), Number: n, Status: SeatFree}
			if id, ok := booked[seat.ID]; ok {
				seat.Status, seat.BookingID = SeatBooked, id
			}
			seat.Bookings = double[seat.ID]
			seats = append(seats, seat)
		}
	}
	return sc, seats, nil
}

// BookRequest is a request to book seats.
type BookRequest struct {
	ScreeningID    string
	Seats          []string
	Customer       string
	IdempotencyKey string // optional
}

// Confirmation is the answer to a successful booking: the booking and its
// secret token, which the customer needs to cancel it and which is shown
// only here.
type Confirmation struct {
	Booking Booking
	Token   string
}

// Book books seats for a customer, all or nothing. It validates the request,
// sorts the seats, takes the locks of the screening's strategy in that order,
// checks the seats are free, waits the payment delay, writes through the
// screening's guard, and releases the locks. Under LockPostgresXact all of
// it, from the locks to the write, runs in one transaction of the store
// (see TxBooker).
//
// It returns ErrInvalid, ErrNotFound, ErrSeatTaken (a *SeatsTakenError),
// ErrSeatBusy when the locks could not be had within the lock wait,
// ErrLockLost when the lock was lost before the write, ErrIdempotencyMismatch,
// ErrUnavailable, or the context's error. A request with an idempotency key
// that already made a booking returns that booking's confirmation again.
func (s *Service) Book(ctx context.Context, req BookRequest) (Confirmation, error) {
	sc, err := s.Screening(ctx, req.ScreeningID)
	if err != nil {
		return Confirmation{}, err
	}
	seats, err := validateBooking(sc, req)
	if err != nil {
		return Confirmation{}, err
	}
	var idem *idempotency
	if req.IdempotencyKey != "" {
		idem = newIdempotency(req.IdempotencyKey, seats, req.Customer)
		if c, ok, err := s.replay(ctx, s.store, sc.ID, idem); ok || err != nil {
			return c, err
		}
	}
	if sc.Lock == LockPostgresXact {
		return s.bookInTransaction(ctx, sc, seats, req.Customer, idem)
	}

	lease, err := s.lock(ctx, sc, seats)
	if err != nil {
		return Confirmation{}, err
	}
	defer s.release(ctx, lease)

	// A request with the same key may have booked while this one waited
	// for the locks.
	if idem != nil {
		if c, ok, err := s.replay(ctx, s.store, sc.ID, idem); ok || err != nil {
			return c, err
		}
	}
	taken, err := s.store.TakenSeats(ctx, sc.ID, seats)
	if err != nil {
		return Confirmation{}, err
	}
	if len(taken) > 0 {
		// Without a lock (LockNone), a request with the same key may have
		// written between the replay check above and this one: its seats
		// are the ones taken, and the right answer is its confirmation.
		if idem != nil {
			if c, ok, err := s.replay(ctx, s.store, sc.ID, idem); ok || err != nil {
				return c, err
			}
		}
		return Confirmation{}, &SeatsTakenError{Seats: taken}
	}
	return s.payAndWrite(ctx, sc, seats, req.Customer, lease, idem)
}

// bookInTransaction runs the critical section of LockPostgresXact: the
// store opens one transaction, locks the seats in it, and everything from
// the check to the write happens inside, reading through the transaction.
// The write needs no fencing token: the lock cannot be lost without the
// transaction failing, and then nothing is written. GuardFence still makes
// the write conditional, as a second line of defence.
func (s *Service) bookInTransaction(ctx context.Context, sc Screening, seats []string, customer string, idem *idempotency) (Confirmation, error) {
	tb, ok := s.store.(TxBooker)
	if !ok {
		return Confirmation{}, fmt.Errorf("screening %s: lock strategy %q needs a store that books in a transaction: %w", sc.ID, sc.Lock, ErrUnavailable)
	}
	// c is the answer: the new booking, or the one a request with the
	// same key made while this one waited; chargeID is the charge the
	// payment made. Only the callback sets them, and BookLocked has
	// returned before they are read.
	var c Confirmation
	replayed := false
	chargeID := ""
	err := tb.BookLocked(ctx, sc.ID, seats, s.opts.LockWait, func(ctx context.Context, r Reader) (*Write, error) {
		if idem != nil {
			var err error
			if c, replayed, err = s.replay(ctx, r, sc.ID, idem); replayed || err != nil {
				return nil, err
			}
		}
		taken, err := r.TakenSeats(ctx, sc.ID, seats)
		if err != nil {
			return nil, err
		}
		if len(taken) > 0 {
			return nil, &SeatsTakenError{Seats: taken}
		}
		w, conf, err := s.newWrite(sc, seats, customer, noLease{}, idem)
		if err != nil {
			return nil, err
		}
		c = conf
		if chargeID, err = s.pay(ctx, sc, w, noLease{}); err != nil {
			return nil, err
		}
		return &w, nil
	})
	if err != nil {
		// The transaction rolled back: nothing was booked.
		s.refund(ctx, chargeID, c.Booking.ID)
	}
	switch {
	case err == nil && replayed:
		return c, nil
	case errors.Is(err, ErrSeatBusy):
		return Confirmation{}, &messageError{kind: ErrSeatBusy, msg: fmt.Sprintf("seats %s are being booked by someone else; try again", strings.Join(seats, ", "))}
	case ctx.Err() != nil && err != nil:
		return Confirmation{}, ctx.Err()
	}
	return s.written(ctx, sc.ID, c, idem, err)
}

// validateBooking checks a booking request against the screening and returns
// its seats sorted.
func validateBooking(sc Screening, req BookRequest) ([]string, error) {
	if len(req.Seats) == 0 || len(req.Seats) > MaxSeatsPerBooking {
		return nil, invalidf("seats must list 1 to %d seats", MaxSeatsPerBooking)
	}
	if err := validText(req.Customer, MaxCustomerLen); err != nil {
		return nil, invalidf("customer %s", err)
	}
	seats := slices.Clone(req.Seats)
	for _, id := range seats {
		if _, _, err := ParseSeatID(id); err != nil {
			return nil, &messageError{kind: ErrInvalid, msg: err.Error()}
		}
		if !sc.HasSeat(id) {
			return nil, invalidf("seat %q is not in screening %s (%d rows of %d seats)", id, sc.ID, sc.Rows, sc.SeatsPerRow)
		}
	}
	sortSeats(seats)
	for i := 1; i < len(seats); i++ {
		if seats[i] == seats[i-1] {
			return nil, invalidf("seat %q is listed twice", seats[i])
		}
	}
	return seats, nil
}

// sortSeats puts seat ids in their one canonical order (row, then number), the
// order in which every booking takes its locks, so that two bookings with
// overlapping seats can never wait for each other in a cycle.
func sortSeats(seats []string) {
	slices.SortFunc(seats, func(a, b string) int {
		ra, na, _ := ParseSeatID(a)
		rb, nb, _ := ParseSeatID(b)
		if ra != rb {
			return int(ra) - int(rb)
		}
		return na - nb
	})
}

// lock takes the seat locks of the screening's strategy, waiting at most the
// service's lock wait.
func (s *Service) lock(ctx context.Context, sc Screening, seats []string) (SeatLease, error) {
	if sc.Lock == LockNone {
		return noLease{}, nil
	}
	locker, ok := s.opts.Lockers[sc.Lock]
	if !ok {
		return nil, fmt.Errorf("screening %s: lock strategy %q is not offered by this server: %w", sc.ID, sc.Lock, ErrUnavailable)
	}
	wait, cancel := context.WithTimeout(ctx, s.opts.LockWait)
	defer cancel()
	lease, err := locker.LockSeats(wait, sc.ID, seats)
	switch {
	case err == nil:
		return lease, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil, &messageError{kind: ErrSeatBusy, msg: fmt.Sprintf("seats %s are being booked by someone else; try again", strings.Join(seats, ", "))}
	default:
		return nil, err
	}
}

// release gives the locks up. It runs after the request may have been
// cancelled, so it uses a context of its own: a lock left behind would
// block the seat until its lease ran out.
func (s *Service) release(ctx context.Context, lease SeatLease) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := lease.Release(ctx); err != nil {
		s.opts.Logger.Warn("releasing seat locks", "err", err)
	}
}

// payAndWrite pays for the booking and records it through the screening's
// guard. A charge that went through is refunded when the booking is not
// confirmed after all: the lock was lost, or the guarded write refused it.
func (s *Service) payAndWrite(ctx context.Context, sc Screening, seats []string, customer string, lease SeatLease, idem *idempotency) (Confirmation, error) {
	w, c, err := s.newWrite(sc, seats, customer, lease, idem)
	if err != nil {
		return Confirmation{}, err
	}
	chargeID, err := s.pay(ctx, sc, w, lease)
	if err == nil {
		err = s.store.Book(ctx, w)
	}
	if err != nil {
		s.refund(ctx, chargeID, w.Booking.ID)
	}
	return s.written(ctx, sc.ID, c, idem, err)
}

// newWrite builds the write of a new booking, with the lease's fencing
// tokens, and the confirmation to answer once it is written.
func (s *Service) newWrite(sc Screening, seats []string, customer string, lease SeatLease, idem *idempotency) (Write, Confirmation, error) {
	token, tokenHash, err := newToken()
	if err != nil {
		return Write{}, Confirmation{}, err
	}
	b := Booking{
		ID:          uuid.NewString(),
		ScreeningID: sc.ID,
		Seats:       seats,
		Customer:    customer,
		Status:      BookingConfirmed,
		CreatedAt:   s.opts.Now().UTC().Truncate(time.Microsecond),
	}
	w := Write{Booking: b, TokenHash: tokenHash, Guard: sc.Guard, Fences: make(map[string]int64, len(seats))}
	for _, seat := range seats {
		if f := lease.Fence(seat); f != 0 {
			w.Fences[seat] = f
		}
	}
	if idem != nil {
		rec, err := idem.record(b.ID, token, b.CreatedAt)
		if err != nil {
			return Write{}, Confirmation{}, err
		}
		w.Idempotency = &rec
	}
	return w, Confirmation{Booking: b, Token: token}, nil
}

// written turns the outcome of a booking's write into the answer: c when
// the write succeeded (err == nil), and tells the event publisher.
func (s *Service) written(ctx context.Context, screeningID string, c Confirmation, idem *idempotency, err error) (Confirmation, error) {
	switch {
	case err == nil:
		s.publish(ctx, EventBooked, c.Booking)
		return c, nil
	case errors.Is(err, ErrStaleToken):
		return Confirmation{}, fmt.Errorf("a newer lock holder has written these seats: %w", ErrLockLost)
	case errors.Is(err, ErrConflict) && idem != nil:
		// Only possible when the same key came with other seats (their
		// locks do not exclude each other) or without a lock: another
		// request with the same key wrote first.
		c, _, err := s.replay(ctx, s.store, screeningID, idem)
		return c, err
	default:
		return Confirmation{}, err
	}
}

// Booking returns a booking, or ErrNotFound.
func (s *Service) Booking(ctx context.Context, id string) (Booking, error) {
	if uuid.Validate(id) != nil {
		return Booking{}, ErrNotFound
	}
	b, _, err := s.store.Booking(ctx, id)
	return b, err
}

// Cancel cancels a booking and frees its seats. The token is the secret of
// the booking's confirmation. It returns ErrNotFound, ErrUnauthorized when
// the token is empty, or ErrForbidden when it is wrong.
func (s *Service) Cancel(ctx context.Context, id, token string) error {
	if uuid.Validate(id) != nil {
		return ErrNotFound
	}
	b, hash, err := s.store.Booking(ctx, id)
	if err != nil {
		return err
	}
	if token == "" {
		return &messageError{kind: ErrUnauthorized, msg: "cancelling needs the booking's token"}
	}
	if !tokenMatches(token, hash) {
		return &messageError{kind: ErrForbidden, msg: "the token does not match this booking"}
	}
	if err := s.store.Cancel(ctx, id); err != nil {
		return err
	}
	if b.Status == BookingConfirmed {
		// A second cancel changes nothing and tells nobody.
		s.publish(ctx, EventCancelled, b)
	}
	return nil
}

// Ready reports whether the store and the lock backend answer. It returns
// an error wrapping ErrUnavailable when one does not.
func (s *Service) Ready(ctx context.Context) error {
	if err := s.store.Ping(ctx); err != nil {
		return fmt.Errorf("store: %w: %w", ErrUnavailable, err)
	}
	if s.opts.LockHealth != nil {
		if err := s.opts.LockHealth(ctx); err != nil {
			return fmt.Errorf("lock backend: %w: %w", ErrUnavailable, err)
		}
	}
	return nil
}

// newToken returns a fresh secret token and its SHA-256 hash, which is all
// the store keeps of it.
func newToken() (token string, hash []byte, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = hex.EncodeToString(b[:])
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

// tokenMatches compares a token with a stored hash in constant time.
func tokenMatches(token string, hash []byte) bool {
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], hash) == 1
}

// idempotency holds what the service derives from an Idempotency-Key. The
// key itself is never stored: the store sees its hash, and the booking's
// token is sealed under a key derived from it.
type idempotency struct {
	keyHash     []byte
	requestHash []byte
	sealKey     [32]byte
}

func newIdempotency(key string, sortedSeats []string, customer string) *idempotency {
	kh := sha256.Sum256([]byte("seatlock idempotency key\x00" + key))
	rh := sha256.Sum256([]byte(strings.Join(sortedSeats, ",") + "\x00" + customer))
	return &idempotency{
		keyHash:     kh[:],
		requestHash: rh[:],
		sealKey:     sha256.Sum256([]byte("seatlock idempotency seal\x00" + key)),
	}
}

// replay returns the confirmation of the booking that the key made before,
// if any, reading through r. ok is false when the key is new.
func (s *Service) replay(ctx context.Context, r Reader, screeningID string, idem *idempotency) (c Confirmation, ok bool, err error) {
	rec, err := r.Idempotent(ctx, screeningID, idem.keyHash)
	if errors.Is(err, ErrNotFound) {
		return Confirmation{}, false, nil
	}
	if err != nil {
		return Confirmation{}, false, err
	}
	if !bytes.Equal(rec.RequestHash, idem.requestHash) {
		return Confirmation{}, true, &messageError{kind: ErrIdempotencyMismatch, msg: "this Idempotency-Key was used with a different request"}
	}
	b, _, err := r.Booking(ctx, rec.BookingID)
	if err != nil {
		return Confirmation{}, true, err
	}
	token, err := idem.open(rec.SealedToken, rec.BookingID)
	if err != nil {
		return Confirmation{}, true, err
	}
	return Confirmation{Booking: b, Token: token}, true, nil
}

func (i *idempotency) record(bookingID, token string, at time.Time) (IdempotencyRecord, error) {
	aead, err := i.aead()
	if err != nil {
		return IdempotencyRecord{}, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return IdempotencyRecord{}, fmt.Errorf("idempotency nonce: %w", err)
	}
	return IdempotencyRecord{
		KeyHash:     i.keyHash,
		RequestHash: i.requestHash,
		BookingID:   bookingID,
		SealedToken: aead.Seal(nonce, nonce, []byte(token), []byte(bookingID)),
		CreatedAt:   at,
	}, nil
}

func (i *idempotency) open(sealed []byte, bookingID string) (string, error) {
	aead, err := i.aead()
	if err != nil {
		return "", err
	}
	n := aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("idempotency record: sealed token too short")
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(bookingID))
	if err != nil {
		return "", fmt.Errorf("idempotency record: %w", err)
	}
	return string(plain), nil
}

func (i *idempotency) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(i.sealKey[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// noLease is the lease of LockNone: nothing held, nothing to lose.
type noLease struct{}

func (noLease) Fence(string) int64            { return 0 }
func (noLease) Lost() <-chan struct{}         { return nil }
func (noLease) Release(context.Context) error { return nil }
