package redisqueue

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/reservation"
)

var (
	//go:embed admit.lua
	admitSource string
	//go:embed join.lua
	joinSource string
	//go:embed entry.lua
	entrySource string
	//go:embed stats.lua
	statsSource string

	// Every script begins with admit.lua: each call admits whoever's turn
	// has come before it answers.
	joinScript  = redis.NewScript(admitSource + joinSource)
	entryScript = redis.NewScript(admitSource + entrySource)
	statsScript = redis.NewScript(admitSource + statsSource)
)

// Client is what Queue needs from a go-redis client: running scripts and
// plain commands. *redis.Client and redis.UniversalClient satisfy it.
type Client interface {
	redis.Scripter
	Get(ctx context.Context, key string) *redis.StringCmd
	Set(ctx context.Context, key string, value any, expiration time.Duration) *redis.StatusCmd
}

// Options tune a Queue. The zero value works.
type Options struct {
	// Registerer receives the queue's metrics (see metrics.go). Nil
	// measures nothing.
	Registerer prometheus.Registerer
}

// Queue is the waiting room of every screening that has one, in Redis.
type Queue struct {
	client  Client
	metrics *metrics
}

var _ reservation.Queue = (*Queue)(nil)

// keep is how long an entry's keys outlive its admission, or its last
// call while it waits: long enough to answer admission_expired rather
// than an unknown token for a while. idleKeys is how long a queue's own
// keys outlive its last join.
const (
	keep     = time.Hour
	idleKeys = 24 * time.Hour
)

// New returns the queue over the client. It returns an error only when
// its metrics cannot be registered.
func New(client Client, opts Options) (*Queue, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Queue{client: client, metrics: m}, nil
}

// keys returns the keys of a screening's queue and the prefix of its
// entries' keys. The braces keep them in one Redis Cluster slot.
func keys(screeningID string) (ks []string, prefix string) {
	prefix = "seatlock:queue:{" + screeningID + "}:"
	return []string{prefix + "wait", prefix + "seen", prefix + "state"}, prefix
}

// indexKey maps an entry's id to its screening, for GET /v1/queue/{id}.
func indexKey(id string) string { return "seatlock:queue:entry:" + id }

// Join puts a new entry at the back of the screening's queue. It returns
// an error wrapping reservation.ErrUnavailable when Redis does not answer.
func (q *Queue) Join(ctx context.Context, cfg reservation.QueueConfig, e reservation.QueueEntry, tokenHash []byte) (reservation.QueueEntry, error) {
	life := cfg.AdmittedFor + cfg.LeaveAfter + keep + idleKeys
	if err := q.client.Set(ctx, indexKey(e.ID), e.ScreeningID, life).Err(); err != nil {
		return reservation.QueueEntry{}, unavailable("join", err)
	}
	ks, prefix := keys(e.ScreeningID)
	reply, err := joinScript.Run(ctx, q.client, ks, prefix, e.ID, e.Customer, hex.EncodeToString(tokenHash),
		cfg.AdmitPerSecond, cfg.AdmittedFor.Milliseconds(), cfg.LeaveAfter.Milliseconds(),
		keep.Milliseconds(), (cfg.AdmittedFor + cfg.LeaveAfter + idleKeys).Milliseconds()).Slice()
	if err != nil {
		return reservation.QueueEntry{}, unavailable("join", err)
	}
	q.metrics.joined.Inc()
	got, _, err := q.answer(e.ScreeningID, reply)
	if err != nil {
		return reservation.QueueEntry{}, err
	}
	return got, nil
}

// Entry returns the entry with the id and its token hash. It returns
// reservation.ErrNotFound for an entry that does not exist or left the
// queue, or an error wrapping reservation.ErrUnavailable.
func (q *Queue) Entry(ctx context.Context, id string) (reservation.QueueEntry, []byte, error) {
	screeningID, err := q.client.Get(ctx, indexKey(id)).Result()
	if errors.Is(err, redis.Nil) {
		return reservation.QueueEntry{}, nil, fmt.Errorf("redisqueue: entry %s: %w", id, reservation.ErrNotFound)
	}
	if err != nil {
		return reservation.QueueEntry{}, nil, unavailable("entry", err)
	}
	return q.entry(ctx, screeningID, id, "")
}

// EntryByToken returns the entry of the screening's queue whose token has
// the hash, with the errors of Entry.
func (q *Queue) EntryByToken(ctx context.Context, screeningID string, tokenHash []byte) (reservation.QueueEntry, error) {
	e, _, err := q.entry(ctx, screeningID, "", hex.EncodeToString(tokenHash))
	return e, err
}

func (q *Queue) entry(ctx context.Context, screeningID, id, tokenHex string) (reservation.QueueEntry, []byte, error) {
	ks, prefix := keys(screeningID)
	reply, err := entryScript.Run(ctx, q.client, ks, prefix, id, tokenHex).Slice()
	if err != nil {
		return reservation.QueueEntry{}, nil, unavailable("entry", err)
	}
	return q.answer(screeningID, reply)
}

// Stats returns the screening's queue as a whole, after admitting whoever's
// turn has come; zeros for a queue nobody joined. It returns an error
// wrapping reservation.ErrUnavailable when Redis does not answer.
func (q *Queue) Stats(ctx context.Context, cfg reservation.QueueConfig, screeningID string) (reservation.QueueStats, error) {
	ks, prefix := keys(screeningID)
	reply, err := statsScript.Run(ctx, q.client, ks, prefix).Slice()
	if err != nil {
		return reservation.QueueStats{}, unavailable("stats", err)
	}
	st, err := q.count(reply)
	if err != nil {
		return reservation.QueueStats{}, err
	}
	st.AdmitPerSecond = cfg.AdmitPerSecond
	return st, nil
}

// count reads the part of what every script returns (see answer in
// admit.lua) that is about the whole queue, counting the admissions and
// leavings it reports.
func (q *Queue) count(reply []any) (reservation.QueueStats, error) {
	if len(reply) != 5 {
		return reservation.QueueStats{}, fmt.Errorf("redisqueue: a script answered %d values, want 5: %w", len(reply), reservation.ErrUnavailable)
	}
	waits, _ := reply[0].([]any)
	for _, w := range waits {
		ms, _ := w.(int64)
		q.metrics.admitted.Inc()
		q.metrics.wait.Observe(time.Duration(ms * int64(time.Millisecond)).Seconds())
	}
	left, _ := reply[1].(int64)
	q.metrics.left.Add(float64(left))
	waiting, _ := reply[2].(int64)
	q.metrics.waiting.Set(float64(waiting))
	admitted, _ := reply[4].(int64)
	return reservation.QueueStats{Waiting: int(waiting), Admitted: int(admitted)}, nil
}

// answer reads what every script that names an entry returns: the
// queue's counts (see count) and the entry.
func (q *Queue) answer(screeningID string, reply []any) (reservation.QueueEntry, []byte, error) {
	st, err := q.count(reply)
	if err != nil {
		return reservation.QueueEntry{}, nil, err
	}
	f, _ := reply[3].([]any)
	if len(f) != 8 {
		return reservation.QueueEntry{}, nil, fmt.Errorf("redisqueue: screening %s: %w", screeningID, reservation.ErrNotFound)
	}
	id, _ := f[0].(string)
	customer, _ := f[1].(string)
	tokenHex, _ := f[2].(string)
	hash, err := hex.DecodeString(tokenHex)
	if err != nil {
		return reservation.QueueEntry{}, nil, fmt.Errorf("redisqueue: entry %s has a malformed token hash: %w", id, reservation.ErrUnavailable)
	}
	position, _ := f[3].(int64)
	admitted, _ := f[4].(int64)
	untilMS, _ := f[5].(int64)
	expired, _ := f[6].(int64)
	etaMS, _ := f[7].(int64)
	e := reservation.QueueEntry{
		ID:          id,
		ScreeningID: screeningID,
		Customer:    customer,
		Position:    int(position),
		Admitted:    admitted == 1,
		Expired:     expired == 1,
		ETA:         time.Duration(etaMS) * time.Millisecond,
		Waiting:     st.Waiting,
	}
	if e.Admitted {
		e.AdmittedUntil = time.UnixMilli(untilMS).UTC()
	}
	return e, hash, nil
}

// unavailable wraps a Redis failure as reservation.ErrUnavailable.
func unavailable(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redisqueue: %s: %w", op, err)
	}
	return fmt.Errorf("redisqueue: %s: %w: %w", op, reservation.ErrUnavailable, err)
}
