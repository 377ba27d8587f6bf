package reservation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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

	// DefaultHoldTTL is how long a hold lasts on screenings created
	// without a hold TTL. Zero means DefaultHoldTTL (10m).
	DefaultHoldTTL time.Duration

	// Payments, when set, is the payment provider a booking charges inside
	// its critical section (taking the screening's payment delay to
	// answer). Nil means a simulated payment: a wait of the payment delay.
	Payments Payments

	// ReconcileEvery is how often Reconcile looks for payments left open.
	// Zero means DefaultReconcileEvery.
	ReconcileEvery time.Duration

	// LockWait is the longest a booking waits for its seat locks before it
	// fails with ErrSeatBusy. Zero means 5s.
	LockWait time.Duration

	// Demo allows the unsafe choices LockNone and GuardOff, and makes
	// Book publish EventEntered and EventLeft around every critical
	// section: they draw the seat map's lock timeline, a teaching view
	// that costs two more events per booking request, seen by every
	// instance.
	Demo bool

	// MaxScreenings bounds how many screenings that have not played yet
	// the store may hold (see PlayedAfter): anyone may create one (unless
	// an admin token guards creation), and each costs rows and a line in
	// every listing. Creating one more fails with ErrLimit. Zero means
	// DefaultMaxScreenings.
	MaxScreenings int

	// LockHealth, when set, reports whether the lock backend answers; Ready
	// calls it.
	LockHealth func(context.Context) error

	// Logger receives warnings (lost locks, failed releases). Nil discards.
	Logger *slog.Logger

	// Events, when set, is told of every booking and cancellation written
	// (see EventPublisher); the live seat map is fed from it.
	Events EventPublisher

	// Queue, when set, is the waiting room of the screenings created with
	// one (see queue.go). Nil offers none: joining the queue of such a
	// screening, or booking on it, is ErrUnavailable.
	Queue Queue

	// QueueLeaveAfter is how long a waiting queue entry that nobody asks
	// about stays in the queue. Zero means DefaultQueueLeaveAfter.
	QueueLeaveAfter time.Duration

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// DefaultMaxScreenings is Options.MaxScreenings when it is zero: far more
// than a workshop, the labs, the test suites or years of loadgen runs
// create (each run creates one screening, compare one per strategy), far
// fewer than would make the database's tables a problem.
const DefaultMaxScreenings = 100_000

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

	// orders caches the best-available order of each layout.
	orders orders // bestavailable.go

	// settleNow wakes Reconcile before its next round: a cancel has made a
	// payment due. It holds at most one wake-up; more would change nothing.
	settleNow chan struct{}
}

// NewService returns a Service over the store.
func NewService(store Store, opts Options) *Service {
	if opts.DefaultLock == "" {
		opts.DefaultLock = LockKeyedRedis
	}
	if opts.DefaultGuard == "" {
		opts.DefaultGuard = GuardFence
	}
	if opts.MaxScreenings <= 0 {
		opts.MaxScreenings = DefaultMaxScreenings
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
	if opts.DefaultHoldTTL <= 0 {
		opts.DefaultHoldTTL = DefaultHoldTTL
	}
	if opts.QueueLeaveAfter <= 0 {
		opts.QueueLeaveAfter = DefaultQueueLeaveAfter
	}
	if opts.ReconcileEvery <= 0 {
		opts.ReconcileEvery = DefaultReconcileEvery
	}
	return &Service{store: store, opts: opts, settleNow: make(chan struct{}, 1)}
}

// checkChoice reports whether the service offers the strategy and guard.
// What is unsafe, and so needs demo mode, is the catalogue's call.
func (s *Service) checkChoice(l Strategy, g Guard) error {
	guard, ok := GuardOf(g)
	if !ok {
		return invalidf("guard %q is unknown; use %q or %q", clip(string(g)), GuardFence, GuardOff)
	}
	// A strategy the catalogue does not know is the server's own (a
	// workshop lab's): offered when the server has a locker for it.
	strategy, known := StrategyOf(l)
	unsafe := known && !strategy.Safe()
	if !unsafe && !s.offers(l) {
		return invalidf("lock %q is not offered by this server; offered: %s", clip(string(l)), strings.Join(s.Strategies(), ", "))
	}
	switch {
	case s.opts.Demo:
	case !guard.Safe:
		return invalidf("guard %q is allowed only in demo mode (DEMO_MODE=true): when two bookings hold one seat at once, %s", g, guard.TwoHolders)
	case unsafe:
		return invalidf("lock %q is allowed only in demo mode (DEMO_MODE=true): it lets two bookings hold one seat at once; under guard %q one of the two writes is refused and its charge refunded", l, g)
	}
	return nil
}

// offers reports whether the service can protect seats with strategy l:
// it has a locker for it.
func (s *Service) offers(l Strategy) bool {
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
	slices.Sort(names)
	return names
}

// Booking returns a booking, or ErrNotFound.
func (s *Service) Booking(ctx context.Context, id string) (Booking, error) {
	if uuid.Validate(id) != nil {
		return Booking{}, notFound("booking", id)
	}
	b, _, err := s.store.Booking(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return Booking{}, notFound("booking", id)
	}
	return b, err
}

// Cancel cancels a booking and frees its seats. The token is the secret of
// the booking's confirmation. It returns ErrNotFound, ErrUnauthorized when
// the token is empty, or ErrForbidden when it is wrong.
func (s *Service) Cancel(ctx context.Context, id, token string) error {
	if uuid.Validate(id) != nil {
		return notFound("booking", id)
	}
	b, hash, err := s.store.Booking(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return notFound("booking", id)
	}
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
		s.wakeReconciler()
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
