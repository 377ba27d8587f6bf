package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/reservation"
)

// Options configure the server. The zero value works.
type Options struct {
	// Logger receives one line per request and every panic. Nil discards.
	Logger *slog.Logger

	// Registry receives the server's metrics and is what GET /metrics
	// serves. Nil means a registry of the server's own. Give it the Go and
	// process collectors too if you want them exported.
	Registry *prometheus.Registry

	// AdminToken, when not empty, is the bearer token that
	// POST /v1/screenings requires.
	AdminToken string

	// ReadyTimeout bounds the backend checks of GET /readyz. Zero means 2s.
	ReadyTimeout time.Duration

	// Ready, when set, is what GET /readyz asks instead of the service's
	// Ready: whether every backend of the server answers. When an error
	// in its chain has a method Backend() string, the 503 names that
	// backend ("redis"); its message is for the log, not for clients.
	Ready func(context.Context) error

	// Events feeds the live streams of GET /v1/screenings/{id}/events.
	// Nil answers that route with 404; the page then shows no live map.
	// Whoever owns the hub closes it before shutting the server down.
	Events *Hub

	// Heartbeat is how often an idle live stream gets a comment, so that
	// proxies keep it open. Zero means 15s.
	Heartbeat time.Duration

	// QueuePoll is how often a live stream of a screening with a waiting
	// room reads the queue's figures, and sends a "queue" event when they
	// changed. Zero means 1s.
	QueuePoll time.Duration

	// MaxStreams bounds the live streams open at once on this server;
	// beyond it a stream is answered 503 unavailable. Each stream holds a
	// connection, a goroutine and a buffer for as long as its client
	// wants. Zero means DefaultMaxStreams.
	MaxStreams int

	// WriteRate bounds the writes (POST and DELETE) this server accepts, in
	// writes per second over all clients, with bursts of WriteBurst; a
	// write beyond it is answered 429 rate_limited with Retry-After, before
	// it touches a backend. It keeps one instance's share of the database
	// and the lock service bounded, whoever sends. Zero means no bound.
	WriteRate float64

	// WriteBurst is how many writes may come at once when the rate has
	// been idle. Zero means WriteRate rounded up, at least 1.
	WriteBurst int

	// ScreeningRate bounds the screenings one client address may create,
	// in screenings a second with bursts of ScreeningBurst, when anyone
	// may create them (AdminToken is empty); beyond it POST
	// /v1/screenings is answered 429 rate_limited with Retry-After,
	// before it touches a backend. It keeps anonymous clients from using
	// up the service's MaxScreenings in minutes. Zero means
	// DefaultScreeningRate, a negative rate no bound. With AdminToken
	// set, only its holder creates screenings, and is not limited.
	ScreeningRate float64

	// ScreeningBurst is how many screenings one client address may create
	// at once. Zero means DefaultScreeningBurst.
	ScreeningBurst int
}

// DefaultMaxStreams is the bound of open live streams when
// Options.MaxStreams is zero: far more browsers than a workshop opens, far
// fewer than would exhaust the process's file descriptors.
const DefaultMaxStreams = 1000

// NewServer returns the HTTP handler of the seatlock API over svc: every
// route of docs/api.md (see routes.go), behind the middleware that
// gives each request an id, logs it, measures it and turns a panic into a
// JSON 500.
func NewServer(svc *reservation.Service, opts Options) http.Handler {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registry == nil {
		opts.Registry = prometheus.NewRegistry()
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 2 * time.Second
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.QueuePoll <= 0 {
		opts.QueuePoll = time.Second
	}
	if opts.ScreeningRate == 0 {
		opts.ScreeningRate = DefaultScreeningRate
	}
	if opts.ScreeningBurst <= 0 {
		opts.ScreeningBurst = DefaultScreeningBurst
	}
	m := newMetrics(opts.Registry)

	// Release mode keeps gin from printing its debug banner and every
	// route; gin stores the mode atomically, so setting it here is safe.
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// An API answers a wrong path with 404 and a wrong method with 405,
	// in JSON, instead of redirecting to a guessed path.
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.Use(observe(opts.Logger, m), recoverPanics(opts.Logger))
	addRoutes(r, svc, opts, m)
	return r
}
