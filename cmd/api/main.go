// Command api is the seatlock HTTP server: the booking API of docs/api.md
// over an in-memory or Postgres store, with seats protected by
// the lock strategy of each screening.
//
// Every setting is a flag and an environment variable (the flag wins):
//
//	api -addr :8080 -lock keyed+redis -payment-delay 200ms
//	DATABASE_URL=postgres://... REDIS_URL=redis://127.0.0.1:6379/0 api
//
// With no DATABASE_URL it keeps its data in memory; with no REDIS_URL it
// starts an embedded Redis server, so that one binary alone runs the real
// distributed-lock code. SIGINT or SIGTERM drain in-flight requests (their
// locks are released), close the backends and exit 0. A bad setting exits 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/redisevents"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/redisqueue"
)

func main() {
	// go-redis's logger is process-wide: set here, once (see redisLog).
	redis.SetLogger(redisLog{slog.New(slog.NewTextHandler(os.Stderr, nil))})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr in one line and returns the exit status:
// 0 for none, 2 for a configuration error, 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	var cfgErr *configError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &cfgErr):
		fmt.Fprintf(stderr, "api: %s\n", oneLine(err))
		return 2
	default:
		fmt.Fprintf(stderr, "api: %s\n", oneLine(err))
		return 1
	}
}

// oneLine is err's message on one line: drivers (pgx) and errors.Join
// break theirs into lines, one per address or error tried.
func oneLine(err error) string {
	msg := strings.ReplaceAll(err.Error(), ":\n", ": ")
	return strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
}

// serverLimits are what the HTTP server grants a client: how long it may
// take to send its headers and its whole request, how long a kept-alive
// connection may sit idle, and how large the headers may be. Without them
// a client that opens connections and sends nothing (or one byte a second)
// would hold a goroutine and a file descriptor each, for ever.
type serverLimits struct {
	readHeader     time.Duration
	read           time.Duration
	idle           time.Duration
	maxHeaderBytes int
}

// defaultLimits are the limits of the real server. A booking may
// legitimately take the lock wait plus a payment delay of up to a minute,
// so writes get longer than that (see run); headers and bodies, which are
// small, get little.
func defaultLimits() serverLimits {
	return serverLimits{
		readHeader:     5 * time.Second,
		read:           15 * time.Second,
		idle:           2 * time.Minute,
		maxHeaderBytes: 32 << 10,
	}
}

// writeMargin is what the write timeout adds to the longest booking.
const writeMargin = 15 * time.Second

// run is the whole program; main only hands it the process's environment.
// It returns when ctx ends (after a graceful shutdown) or the server fails.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWith(ctx, args, getenv, stdout, stderr, defaultLimits())
}

// runWith is run with the server's limits given, so that tests can check
// them in a second rather than in minutes. It reads as the program's
// steps: configure, open the backends, build the service and the server,
// serve until ctx ends, drain.
func runWith(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, limits serverLimits) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.Healthcheck {
		return healthcheck(ctx, cfg.Addr, stdout)
	}
	logger, flushLog := newLogger(stderr)
	defer flushLog()
	if cfg.PprofAddr != "" {
		ln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			return err
		}
		defer startPprof(ln, logger)()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a, err := openApp(ctx, cfg, reg, logger)
	if err != nil {
		return err
	}
	defer a.close(logger)
	srv := newServer(cfg, limits, a.handler, logger)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	// Tests and scripts read this line to find a port chosen by the system.
	logger.Info("listening on http://"+ln.Addr().String(), "seat_map", seatMapURL(ln.Addr()),
		"lock", cfg.Lock, "guard", cfg.Guard, "demo", cfg.Demo)
	return serve(ctx, srv, ln, a.hub, logger)
}

// app is what serves the API: the backends, the live seat map's hub and
// the events that feed it, the booking service, and its HTTP handler.
type app struct {
	backends *backends
	hub      *httpapi.Hub
	events   *redisevents.Bus
	svc      *reservation.Service
	handler  http.Handler
	// stopReconciler stops the service's payment reconciler and waits for
	// it; nil until it runs.
	stopReconciler func()
}

// openApp opens the backends and builds the service and its handler,
// with its metrics in reg. The caller closes the app.
func openApp(ctx context.Context, cfg config, reg *prometheus.Registry, logger *slog.Logger) (_ *app, err error) {
	lockMetrics, err := locking.NewMetrics(reg, logger)
	if err != nil {
		return nil, err
	}
	// The backends measure their lockers with lockMetrics, layer by layer.
	b, err := openBackends(ctx, cfg, logger, lockMetrics)
	if err != nil {
		return nil, err
	}
	a := &app{backends: b}
	defer func() {
		if err != nil {
			a.close(logger)
		}
	}()

	// The live seat map: this instance's bookings go out over Redis, and
	// everyone's come back to the hub, which feeds the open pages: only
	// those of the screenings a page here follows, so that an instance
	// on which no page was ever opened receives none of its neighbours'
	// events.
	a.hub = httpapi.NewHub(0)
	a.events = redisevents.Start(ctx, b.redis, a.hub, redisevents.Options{Logger: logger, Namespace: b.eventsNamespace()})
	a.hub.SetFeed(a.events)

	// The waiting rooms live in the Redis the locks use, shared by every
	// instance.
	if b.queue, err = redisqueue.New(b.redis, redisqueue.Options{Registerer: reg}); err != nil {
		return nil, err
	}
	a.svc, err = newService(ctx, cfg, b, a.events, logger)
	if err != nil {
		return nil, err
	}
	if cfg.ReconcileEvery > 0 {
		a.stopReconciler = startReconciler(a.svc)
	} else if cfg.PaymentURL != "" {
		logger.Warn("payments: the reconciler is off (RECONCILE_EVERY=0): a payment left open by a crash or a pause stays open, charged and never refunded")
	}
	a.handler = httpapi.NewServer(a.svc, httpapi.Options{
		Logger:     logger,
		Registry:   reg,
		AdminToken: cfg.AdminToken,
		Events:     a.hub,
		WriteRate:  cfg.WriteRate,
		Ready:      b.ready,
	})
	return a, nil
}

// close stops the reconciler and the events, then closes the backends:
// both need them.
func (a *app) close(logger *slog.Logger) {
	if a.stopReconciler != nil {
		a.stopReconciler()
	}
	if a.events != nil {
		a.events.Close()
	}
	a.backends.close(logger)
}

// startReconciler runs the service's payment reconciler (a no-op without
// a payment provider) until the returned stop is called; stop waits for it.
// Every instance runs one: the store lets each payment be settled by one
// reconciler at a time.
func startReconciler(svc *reservation.Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.Reconcile(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// newService builds the booking service over the backends, and makes sure
// of the demo screening.
func newService(ctx context.Context, cfg config, b *backends, events reservation.EventPublisher, logger *slog.Logger) (*reservation.Service, error) {
	var payments reservation.Payments
	if cfg.PaymentURL != "" {
		client, err := payment.NewClient(cfg.PaymentURL, payment.ClientOptions{})
		if err != nil {
			return nil, err // checked by config.validate
		}
		payments = client
		if cfg.ReconcileEvery > 0 {
			logger.Info("payments: charging through a provider; a payment left open is settled by the reconciler",
				"url", cfg.PaymentURL, "settled_within", reservation.PaymentsSettleWithin(cfg.PaymentDelay, cfg.ReconcileEvery))
		}
	}
	svc := reservation.NewService(b.store, reservation.Options{
		Payments:            payments,
		ReconcileEvery:      cfg.ReconcileEvery,
		Events:              events,
		Lockers:             b.lockers,
		DefaultLock:         cfg.Lock,
		DefaultGuard:        cfg.Guard,
		DefaultPaymentDelay: cfg.PaymentDelay,
		DefaultHoldTTL:      cfg.HoldTTL,
		LockWait:            cfg.LockWait,
		Demo:                cfg.Demo,
		MaxScreenings:       cfg.MaxScreenings,
		LockHealth:          b.lockHealth,
		Logger:              logger,
		Queue:               b.queue,
	})
	// Every instance makes sure of the demo screening; the second one finds
	// it there (the store answers ErrConflict, which EnsureScreening takes).
	if err := svc.EnsureScreening(ctx, reservation.NewScreening{ID: "demo", Movie: "Demo Night", Rows: 10, SeatsPerRow: 20}); err != nil {
		return nil, fmt.Errorf("demo screening: %w", err)
	}
	return svc, nil
}

// newServer returns the HTTP server of handler with the limits it grants a
// client. Its write timeout is as long as the longest booking may take.
func newServer(cfg config, limits serverLimits, handler http.Handler, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: limits.readHeader,
		ReadTimeout:       limits.read,
		WriteTimeout:      cfg.LockWait + reservation.MaxPaymentDelay + writeMargin,
		IdleTimeout:       limits.idle,
		MaxHeaderBytes:    limits.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// serve serves on ln until ctx ends or the server fails, then drains: the
// requests in flight finish, with their locks released, before serve
// returns and the backends close.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, hub *httpapi.Hub, logger *slog.Logger) error {
	// The server goroutine is owned here: its result is always received
	// before serve returns.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	// ctx has ended, so the drain gets a fresh context, as long as the
	// longest request may take.
	logger.Info("shutting down: draining requests")
	// Shutdown waits for every request, and a live stream never ends by
	// itself: closing the hub ends them all first. (Shutdown does not
	// cancel requests' contexts; it only waits for handlers to return.)
	hub.Close()
	drain, cancel := context.WithTimeout(context.Background(), srv.WriteTimeout)
	defer cancel()
	err := srv.Shutdown(drain)
	if err != nil {
		// Cut the connections still open: their requests' contexts end,
		// so the bookings stop before they write and release their locks.
		err = errors.Join(fmt.Errorf("shutdown: %w", err), srv.Close())
	}
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	if err == nil {
		logger.Info("stopped")
	}
	return err
}

// newLogger returns the server's logger, writing text lines to w through a
// logWriter (a line per request, gathered into one write system call for
// the lines that come together), and the function that writes what is
// pending and stops its goroutine.
func newLogger(w io.Writer) (*slog.Logger, func()) {
	lw := newLogWriter(w)
	return slog.New(slog.NewTextHandler(lw, nil)), lw.close
}

// seatMapURL is where a browser on this machine finds the seat map (GET /)
// of a server listening on addr: on localhost when it listens on every
// address (":8080").
func seatMapURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + "/"
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
