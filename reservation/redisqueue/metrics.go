package redisqueue

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics measure the waiting rooms as this instance sees them. No label
// comes from a client: screening ids are not labels, so every figure is
// over all the screenings with a queue. The counters count what this
// instance's calls did; summed over the instances they count every join,
// admission and leaving.
type metrics struct {
	joined   prometheus.Counter
	admitted prometheus.Counter
	left     prometheus.Counter
	waiting  prometheus.Gauge
	wait     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		joined: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatlock_queue_joined_total",
			Help: "Entries that joined a waiting room through this instance.",
		}),
		admitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatlock_queue_admitted_total",
			Help: "Entries admitted by this instance's calls to a waiting room.",
		}),
		left: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seatlock_queue_left_total",
			Help: "Waiting entries that left a waiting room, not asked about for too long, found by this instance's calls.",
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seatlock_queue_length",
			Help: "Entries waiting in the waiting room this instance called on last.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seatlock_queue_wait_seconds",
			Help:    "Time from joining a waiting room to admission, of the admissions made by this instance's calls.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 14), // 10ms to ~4h
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.joined, m.admitted, m.left, m.waiting, m.wait} {
		if err := reg.Register(c); err != nil {
			var dup prometheus.AlreadyRegisteredError
			if !errors.As(err, &dup) {
				return nil, err
			}
		}
	}
	return m, nil
}
