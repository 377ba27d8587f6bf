package httpapi

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus collectors. Routes are labelled by
// their pattern ("/v1/screenings/:id"), never by the raw path, so that the
// number of series stays bounded whatever clients send.
type metrics struct {
	requests *prometheus.CounterVec   // route, method, status
	duration *prometheus.HistogramVec // route, status
	inFlight *prometheus.GaugeVec     // route
	bookings *prometheus.CounterVec   // strategy, outcome

	holdMetrics // holds.go
}

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
