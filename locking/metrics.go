package locking

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/internal/series"
	"github.com/seatlock/seatlock/reservation"
)

// Observer is told how a locker's locks are used: how long each LockSeats
// waited, how long each lease was held, and which leases were lost while
// held. Instrument calls it; Metrics is the Prometheus implementation.
// Its methods are called from many goroutines at once and must be quick.
type Observer interface {
	// Waited reports one LockSeats call: how long it took and whether it
	// got the locks (err == nil).
	Waited(layer string, d time.Duration, err error)
	// Held reports one lease, from the moment it was had to its release.
	Held(layer string, d time.Duration)
	// Lost reports a lease whose Lost channel had closed by its release:
	// its lock expired while held, and the booking must have been aborted
	// or fenced off.
	Lost(layer, screeningID string)
}

// Instrument returns a locker that behaves exactly like l and reports every
// wait, hold and loss to obs under the label layer ("keyed", "redis",
// "keyed+redis", ...). Wrap each layer of a Layered locker on its own to
// see where bookings wait:
//
//	keyed := locking.Instrument("keyed", locking.Keyed(&seats), m)
//	redis := locking.Instrument("redis", locking.Distributed(redisLocks), m)
//	both := locking.Layered(keyed, redis)
func Instrument(layer string, l reservation.SeatLocker, obs Observer) reservation.SeatLocker {
	return instrumented{layer: layer, l: l, obs: obs}
}

type instrumented struct {
	layer string
	l     reservation.SeatLocker
	obs   Observer
}

func (i instrumented) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	start := time.Now()
	lease, err := i.l.LockSeats(ctx, screeningID, seats)
	had := time.Now()
	i.obs.Waited(i.layer, had.Sub(start), err)
	if err != nil {
		return nil, err
	}
	return &instrumentedLease{SeatLease: lease, i: i, screeningID: screeningID, had: had}, nil
}

// instrumentedLease reports the hold time and a loss when it is released.
// A loss is seen at release rather than when it happens, so that no
// goroutine has to watch every lease: a booking notices the loss itself
// (reservation aborts before the write) and releases right after.
type instrumentedLease struct {
	reservation.SeatLease
	i           instrumented
	screeningID string
	had         time.Time
}

func (l *instrumentedLease) Release(ctx context.Context) error {
	select {
	case <-l.Lost(): // a nil channel (a lock that cannot be lost) never fires
		l.i.obs.Lost(l.i.layer, l.screeningID)
	default:
	}
	err := l.SeatLease.Release(ctx)
	l.i.obs.Held(l.i.layer, time.Since(l.had))
	return err
}

// Metrics is an Observer that keeps Prometheus histograms of lock wait and
// hold times and a counter of lost leases, all by layer, and logs each loss
// as a warning. It has no per-seat or per-screening labels, so the number
// of series is bounded by the number of layers.
type Metrics struct {
	wait   *prometheus.HistogramVec // layer, outcome
	hold   *prometheus.HistogramVec // layer
	lost   *prometheus.CounterVec   // layer
	renew  *prometheus.CounterVec   // layer, result
	logger *slog.Logger

	// The series of wait and hold that bookings have used, by their
	// labels: a booking finds each by one lookup (see package series).
	waitOf *series.Cache[waitKey, prometheus.Observer]
	holdOf *series.Cache[string, prometheus.Observer] // by layer
}

// waitKey labels a wait: the layer, and "acquired" or "failed".
type waitKey struct{ layer, outcome string }

// lockBuckets go from 1µs, where an uncontended in-process mutex answers,
// by factors of 4 to about 17s, past the longest lock wait a booking
// allows: one histogram shows both a keyed mutex and a Redis round trip.
var lockBuckets = prometheus.ExponentialBuckets(1e-6, 4, 13)

// NewMetrics registers the lock metrics with reg and returns them; losses
// are logged to logger (nil discards). It returns an error if reg already
// holds collectors of these names.
func NewMetrics(reg prometheus.Registerer, logger *slog.Logger) (*Metrics, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seatlock_lock_wait_seconds",
			Help:    `Time a booking waited for its seat locks, by layer and outcome ("acquired" or "failed").`,
			Buckets: lockBuckets,
		}, []string{"layer", "outcome"}),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "seatlock_lock_hold_seconds",
			Help:    "Time seat locks were held, from acquisition to release, by layer.",
			Buckets: lockBuckets,
		}, []string{"layer"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatlock_lock_lost_total",
			Help: "Seat leases that expired while held (their Lost channel closed), by layer.",
		}, []string{"layer"}),
		renew: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatlock_lock_renewals_total",
			Help: `Lease renewals by a lock service's watchdog, by layer and result ("renewed", "failed": an error, retried while the lease lasts; "lost": the key was found gone or the lease ran out).`,
		}, []string{"layer", "result"}),
		logger: logger,
	}
	m.waitOf = series.New(func(k waitKey) prometheus.Observer { return m.wait.WithLabelValues(k.layer, k.outcome) })
	m.holdOf = series.New(func(layer string) prometheus.Observer { return m.hold.WithLabelValues(layer) })
	for _, c := range []prometheus.Collector{m.wait, m.hold, m.lost, m.renew} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("locking: registering lock metrics"), err)
		}
	}
	return m, nil
}

// Waited records a wait.
func (m *Metrics) Waited(layer string, d time.Duration, err error) {
	outcome := "acquired"
	if err != nil {
		outcome = "failed"
	}
	m.waitOf.Get(waitKey{layer, outcome}).Observe(d.Seconds())
}

// Held records a hold time.
func (m *Metrics) Held(layer string, d time.Duration) {
	m.holdOf.Get(layer).Observe(d.Seconds())
}

// Lost counts a lost lease and logs it as a warning: a lost lock means a
// pause or an outage longer than the lease, which an operator must see.
func (m *Metrics) Lost(layer, screeningID string) {
	m.lost.WithLabelValues(layer).Inc()
	m.logger.Warn("seat lock lost while held", "layer", layer, "screening", screeningID)
}

// Renewals returns the counters of one layer's lease renewals, for a lock
// service with a watchdog: pass it as distlock.RedisOptions.Observer. Its
// methods only increment counters, so they never hold the watchdog up.
func (m *Metrics) Renewals(layer string) *Renewals {
	return &Renewals{
		renewed: m.renew.WithLabelValues(layer, "renewed"),
		failed:  m.renew.WithLabelValues(layer, "failed"),
		lost:    m.renew.WithLabelValues(layer, "lost"),
	}
}

var _ distlock.RenewalObserver = (*Renewals)(nil)

// Renewals counts the renewals of one layer's watchdog in
// seatlock_lock_renewals_total. It implements distlock.RenewalObserver.
type Renewals struct {
	renewed, failed, lost prometheus.Counter
}

// Renewed counts one renewal: "renewed" when err is nil, else "failed".
func (r *Renewals) Renewed(err error) {
	if err != nil {
		r.failed.Inc()
		return
	}
	r.renewed.Inc()
}

// Lost counts one lock the watchdog found lost. The lease's own layer
// counts it again in seatlock_lock_lost_total when it is released.
func (r *Renewals) Lost() { r.lost.Inc() }
