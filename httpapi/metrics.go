package httpapi

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/internal/series"
)

// metrics are the server's Prometheus collectors. Routes are labelled by
// their pattern ("/v1/screenings/:id"), never by the raw path, so that the
// number of series stays bounded whatever clients send.
type metrics struct {
	requests *prometheus.CounterVec   // route, method, status
	duration *prometheus.HistogramVec // route, status
	inFlight *prometheus.GaugeVec     // route
	bookings *prometheus.CounterVec   // strategy, outcome

	// The series of the vectors above that requests have used, by their
	// labels: a request finds each by one lookup (see package series).
	answered   *series.Cache[answerKey, answerSeries]
	inFlightOf *series.Cache[string, prometheus.Gauge] // by route
	bookingsOf *series.Cache[bookingKey, prometheus.Counter]

	holdMetrics // holds.go
}

// answerKey labels an answered request: its route pattern, its method
// (methodLabel) and its status.
type answerKey struct {
	route, method string
	status        int
}

// answerSeries are the series of one answerKey.
type answerSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// bookingKey labels a booking attempt: the screening's strategy and the
// outcome.
type bookingKey struct{ strategy, outcome string }

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and status. A live event stream counts its whole life.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 14), // 100µs to ~150s
		}, []string{"route", "status"})),
		inFlight: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "http_requests_in_flight",
			Help: "HTTP requests being served, by route pattern.",
		}, []string{"route"})),
		bookings: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seatlock_bookings_total",
			Help: `Booking attempts by the screening's lock strategy and outcome ("confirmed" or the error code).`,
		}, []string{"strategy", "outcome"})),
	}
	m.answered = series.New(func(k answerKey) answerSeries {
		status := strconv.Itoa(k.status)
		return answerSeries{
			requests: m.requests.WithLabelValues(k.route, k.method, status),
			duration: m.duration.WithLabelValues(k.route, status),
		}
	})
	m.inFlightOf = series.New(func(route string) prometheus.Gauge { return m.inFlight.WithLabelValues(route) })
	m.bookingsOf = series.New(func(k bookingKey) prometheus.Counter { return m.bookings.WithLabelValues(k.strategy, k.outcome) })
	m.holdMetrics = newHoldMetrics(reg)
	return m
}

// register adds c to reg, or returns the collector registered before under
// the same name, so that two servers sharing a registry share the series
// instead of panicking.
func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil {
		// Only a programming error gets here: a name clash with a
		// collector of another type.
		panic(err)
	}
	return c
}
