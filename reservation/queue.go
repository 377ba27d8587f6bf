package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The waiting room of an on-sale. A screening created with a QueueConfig
// puts its buyers in a queue: each joins and gets a secret token, the
// queue admits them in the order they joined, at most AdmitPerSecond a
// second, and only an admitted buyer's token lets a booking or a hold
// through (see Service.admitted, the one place that decides). The queue
// itself lives outside the process (see Queue), so that every instance
// admits from the same line.

// Bounds of a queue's settings.
const (
	MinAdmitPerSecond = 1
	MaxAdmitPerSecond = 10000
	MinAdmittedFor    = time.Second
	MaxAdmittedFor    = 24 * time.Hour
	// DefaultAdmittedFor is how long an admission lasts when the screening
	// does not say.
	DefaultAdmittedFor = 10 * time.Minute
	// DefaultQueueLeaveAfter is how long a waiting entry that nobody asks
	// about stays in the queue.
	DefaultQueueLeaveAfter = time.Minute
)

// QueueConfig is the waiting room of a screening. The zero value is none.
type QueueConfig struct {
	// AdmitPerSecond is the most buyers admitted in a second.
	AdmitPerSecond int
	// AdmittedFor is how long an admission lets its buyer hold and book.
	AdmittedFor time.Duration
	// LeaveAfter is how long a waiting entry nobody asks about stays in the
	// queue. It is not stored with the screening: the service sets it
	// from Options.QueueLeaveAfter on every call to the Queue.
	LeaveAfter time.Duration
}

// Enabled reports whether the screening has a waiting room.
func (q QueueConfig) Enabled() bool { return q.AdmitPerSecond > 0 }

// QueueEntry is one buyer's place in a screening's queue.
type QueueEntry struct {
	ID          string
	ScreeningID string
	Customer    string
	// Position is 1 for the next buyer to be admitted, 0 once admitted.
	Position int
	Admitted bool
	// AdmittedUntil is when the admission ends; zero while waiting.
	AdmittedUntil time.Time
	// Expired says that the admission has ended, by the queue's clock.
	Expired bool
	// ETA is about how long until admission, at the queue's pace; zero
	// once admitted.
	ETA time.Duration
	// Waiting is how many entries wait in the queue, this one included
	// while it waits.
	Waiting int
}

// Queue is a screening's waiting room, shared by every instance of the
// service. Every call that names an entry counts as asking about it: an
// entry waiting longer than the config's LeaveAfter without a call leaves
// the queue. Each call first admits, in the order of joining, as many
// waiting entries as the pace allows by now (by the queue's own clock),
// each once.
type Queue interface {
	// Join puts a new entry at the back of the screening's queue, with
	// the hash of its secret token, and returns it as it stands after
	// admitting.
	Join(ctx context.Context, q QueueConfig, e QueueEntry, tokenHash []byte) (QueueEntry, error)

	// Entry returns the entry with the id and the hash of its token, or
	// ErrNotFound (also for an entry that left the queue).
	Entry(ctx context.Context, id string) (QueueEntry, []byte, error)

	// EntryByToken returns the entry of the screening's queue whose token
	// has the hash, or ErrNotFound.
	EntryByToken(ctx context.Context, screeningID string, tokenHash []byte) (QueueEntry, error)

	// Stats returns the screening's queue as a whole, after admitting;
	// zeros for a queue nobody joined.
	Stats(ctx context.Context, q QueueConfig, screeningID string) (QueueStats, error)
}

// QueueStats is a screening's waiting room as a whole: what the live seat
// map shows of it.
type QueueStats struct {
	// Waiting is how many entries wait in the queue now.
	Waiting int
	// Admitted is how many entries the queue has admitted since it began,
	// whether their admission lasts or has ended.
	Admitted int
	// AdmitPerSecond is the queue's pace, from the screening.
	AdmitPerSecond int
}

// Errors of the waiting room.
var (
	// ErrNoQueue is returned when a buyer joins the queue of a screening
	// that has no waiting room.
	ErrNoQueue = errors.New("no queue")

	// ErrNotAdmitted is returned by a booking or a hold on a screening
	// with a waiting room when the request carries no token of an
	// admitted entry. It is a *NotAdmittedError when the entry waits.
	ErrNotAdmitted = errors.New("not admitted")

	// ErrAdmissionExpired is returned by a booking or a hold whose queue
	// entry was admitted, but its admission has ended.
	ErrAdmissionExpired = errors.New("admission expired")
)

// NotAdmittedError is the ErrNotAdmitted of an entry still waiting: its
// position in the queue.
type NotAdmittedError struct {
	Position int
}

func (e *NotAdmittedError) Error() string {
	return fmt.Sprintf("not admitted yet: position %d in the queue", e.Position)
}

// Is makes errors.Is(err, ErrNotAdmitted) true.
func (e *NotAdmittedError) Is(target error) bool { return target == ErrNotAdmitted }

// QueueJoin is the answer to joining a queue: the entry and its secret
// token, shown only here.
type QueueJoin struct {
	Entry QueueEntry
	Token string
}

// validQueue checks a screening's queue settings and fills in the default
// admission length.
func validQueue(q QueueConfig) (QueueConfig, error) {
	if !q.Enabled() && q.AdmittedFor == 0 {
		return QueueConfig{}, nil
	}
	if q.AdmitPerSecond < MinAdmitPerSecond || q.AdmitPerSecond > MaxAdmitPerSecond {
		return QueueConfig{}, invalidf("queue.admit_per_s must be from %d to %d", MinAdmitPerSecond, MaxAdmitPerSecond)
	}
	if q.AdmittedFor == 0 {
		q.AdmittedFor = DefaultAdmittedFor
	}
	if q.AdmittedFor < MinAdmittedFor || q.AdmittedFor > MaxAdmittedFor {
		return QueueConfig{}, invalidf("queue.admitted_for_ms must be from %d to %d", MinAdmittedFor.Milliseconds(), MaxAdmittedFor.Milliseconds())
	}
	q.AdmittedFor = q.AdmittedFor.Truncate(time.Millisecond)
	q.LeaveAfter = 0
	return q, nil
}

// queueOf returns the screening's waiting room as the Queue gets it, or
// ErrNoQueue; a service without a Queue offers none.
func (s *Service) queueOf(sc Screening) (QueueConfig, error) {
	if !sc.Queue.Enabled() {
		return QueueConfig{}, errorf(ErrNoQueue, "screening %s has no waiting room", sc.ID)
	}
	if s.opts.Queue == nil {
		return QueueConfig{}, fmt.Errorf("screening %s has a waiting room, but this server has no queue: %w", sc.ID, ErrUnavailable)
	}
	q := sc.Queue
	q.LeaveAfter = s.opts.QueueLeaveAfter
	return q, nil
}

// JoinQueue puts a buyer at the back of the screening's queue. It returns
// ErrNotFound, ErrNoQueue, ErrInvalid for a bad customer, or
// ErrUnavailable.
func (s *Service) JoinQueue(ctx context.Context, screeningID, customer string) (QueueJoin, error) {
	sc, err := s.Screening(ctx, screeningID)
	if err != nil {
		return QueueJoin{}, err
	}
	q, err := s.queueOf(sc)
	if err != nil {
		return QueueJoin{}, err
	}
	if err := validText(customer, MaxCustomerLen); err != nil {
		return QueueJoin{}, invalidf("customer %s", err)
	}
	token, hash, err := newToken()
	if err != nil {
		return QueueJoin{}, err
	}
	e, err := s.opts.Queue.Join(ctx, q, QueueEntry{ID: uuid.NewString(), ScreeningID: sc.ID, Customer: customer}, hash)
	if err != nil {
		return QueueJoin{}, err
	}
	return QueueJoin{Entry: e, Token: token}, nil
}

// QueueEntry returns a queue entry to the holder of its token, and keeps
// it in the queue. It returns ErrNotFound (also once the entry left the
// queue), ErrUnauthorized without a token, ErrForbidden for a wrong one,
// or ErrUnavailable.
func (s *Service) QueueEntry(ctx context.Context, id, token string) (QueueEntry, error) {
	if uuid.Validate(id) != nil || s.opts.Queue == nil {
		return QueueEntry{}, notFound("queue entry", id)
	}
	e, hash, err := s.opts.Queue.Entry(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return QueueEntry{}, notFound("queue entry", id)
	}
	if err != nil {
		return QueueEntry{}, err
	}
	if token == "" {
		return QueueEntry{}, errorf(ErrUnauthorized, "a queue entry is shown only with its token")
	}
	if !tokenMatches(token, hash) {
		return QueueEntry{}, errorf(ErrForbidden, "the token does not match this queue entry")
	}
	return e, nil
}

// QueueStats returns the waiting room of a screening as a whole. It
// returns ErrNoQueue for a screening without one, or ErrUnavailable.
func (s *Service) QueueStats(ctx context.Context, sc Screening) (QueueStats, error) {
	q, err := s.queueOf(sc)
	if err != nil {
		return QueueStats{}, err
	}
	return s.opts.Queue.Stats(ctx, q, sc.ID)
}

// screeningFor returns the screening of a booking or a hold, once its
// waiting room, if it has one, admits the queue token (see admitted).
func (s *Service) screeningFor(ctx context.Context, screeningID, queueToken string) (Screening, error) {
	sc, err := s.Screening(ctx, screeningID)
	if err != nil {
		return Screening{}, err
	}
	if err := s.admitted(ctx, sc, queueToken); err != nil {
		return Screening{}, err
	}
	return sc, nil
}

// admitted is the one place that decides whether a booking or a hold may
// go on: on a screening without a waiting room always; on one with, only
// with the token of an entry that is admitted now. It returns
// ErrNotAdmitted (a *NotAdmittedError with the position while the entry
// waits), ErrAdmissionExpired, or ErrUnavailable.
func (s *Service) admitted(ctx context.Context, sc Screening, token string) error {
	if !sc.Queue.Enabled() {
		return nil
	}
	if _, err := s.queueOf(sc); err != nil {
		return err
	}
	if token == "" {
		return errorf(ErrNotAdmitted, "screening %s has a waiting room: join its queue and send the queue token once admitted", sc.ID)
	}
	hash := tokenHash(token)
	e, err := s.opts.Queue.EntryByToken(ctx, sc.ID, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return errorf(ErrNotAdmitted, "the token is no entry of the queue of screening %s (an entry nobody asks about leaves it)", sc.ID)
	case err != nil:
		return err
	case !e.Admitted:
		return &NotAdmittedError{Position: e.Position}
	case e.Expired:
		return errorf(ErrAdmissionExpired, "the admission ended at %s", e.AdmittedUntil.UTC().Format(time.RFC3339))
	}
	return nil
}
