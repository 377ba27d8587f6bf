package main

import (
	"github.com/seatlock/seatlock/payment"

	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// verifyTimeout bounds reading the final seat maps and looking up phantom
// bookings. It runs even after Ctrl-C, so that an interrupted run is still
// verified as far as it went.
const verifyTimeout = 2 * time.Minute

// refusedError is returned by runScenario when the server answered 400 to
// the creation of the screening: it does not accept that lock strategy or
// guard (the unsafe ones need DEMO_MODE=true on the server).
type refusedError struct {
	lock, guard, message string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("the server refused a screening with lock %q, guard %q: %s", e.lock, e.guard, e.message)
}

// runScenario runs one scenario against cfg.targets: it checks they answer,
// prepares the screening, sends the load, then verifies the result from the
// answers and the final seat map. It returns the report whatever
// verification found (see report.failed); an error means the run could not
// be made or verified. Integration tests call it directly.
func runScenario(ctx context.Context, cfg config, p progress) (*report, error) {
	c := newClient(cfg.clients, len(cfg.targets), cfg.timeout, cfg.adminToken)
	defer c.close()

	for _, t := range cfg.targets {
		if err := c.health(ctx, t); err != nil {
			return nil, usagef("target %s is unreachable: %v", t, err)
		}
	}
	if cfg.scenario == scenarioHealthz {
		return runHealthz(ctx, c, cfg, p)
	}
	if cfg.scenario == scenarioHold || cfg.scenario == scenarioBest {
		return runTicketing(ctx, c, cfg, p)
	}
	// Set-up and verification go to the first target; with one shared
	// database every instance sees the same screenings.
	setup := cfg.targets[0]
	first, before, err := prepareScreening(ctx, c, setup, cfg)
	if err != nil {
		return nil, err
	}
	pool := newScreeningPool(first, func(ctx context.Context) (*screening, error) {
		return createLike(ctx, c, setup, cfg.scenario, first)
	})
	if cfg.scenario == scenarioSpread && cfg.stopByRequests {
		// Create every screening the run needs before the clock starts.
		if _, _, err := pool.locate(ctx, cfg.requests-1); err != nil {
			return nil, err
		}
	}
	seed := cfg.seed
	if seed == 0 {
		seed = mathrand.Uint64()
	}
	pick, err := newPicker(cfg.scenario, pool, cfg.seats, len(cfg.targets), seed)
	if err != nil {
		return nil, err
	}

	total := int64(-1)
	if cfg.stopByRequests {
		total = int64(cfg.requests)
	}
	// Open pages watch every screening the run has so far (for spread
	// with -requests, every one it will use) before the clock starts.
	var watching *watchers
	if cfg.watchers > 0 {
		var ids []string
		for _, s := range pool.all() {
			ids = append(ids, s.ID)
		}
		if watching, err = startWatchers(ctx, cfg.watchers, cfg.targets, ids); err != nil {
			return nil, err
		}
	}
	// The provider's counts are read before and after the run: the run's
	// own are the difference.
	var paidBefore payment.Stats
	if cfg.payments != "" {
		if paidBefore, err = c.paymentStats(ctx, cfg.payments); err != nil {
			return nil, usagef("payment provider %s is unreachable: %v", cfg.payments, err)
		}
	}
	tick, finish := p.start(total, first.Lock+"/"+first.Guard)
	d := &driver{
		client:   c,
		targets:  cfg.targets,
		picker:   pick,
		clients:  cfg.clients,
		rate:     cfg.rate,
		duration: cfg.duration,
		runID:    newRunID(),
		seed:     seed,
		progress: tick,
	}
	if cfg.stopByRequests {
		d.requests = cfg.requests
	}
	records, start, wall, err := d.run(ctx)
	finish()
	var events, cut int64
	if watching != nil {
		// The last events of the run are still on their way: give them a
		// moment (the server publishes from a queue) before closing.
		time.Sleep(watcherGrace)
		events, cut = watching.stop()
	}
	if err != nil {
		return nil, err
	}

	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), verifyTimeout)
	defer cancel()
	screenings := pool.all()
	final, err := readSeats(vctx, c, setup, screenings, start)
	if err != nil {
		return nil, fmt.Errorf("reading the final seat map: %w", err)
	}
	var paid *paymentCounts
	if cfg.payments != "" {
		// Every answer is in, and the API refunds before it answers: the
		// provider's counts are final.
		after, err := c.paymentStats(vctx, cfg.payments)
		if err != nil {
			return nil, fmt.Errorf("reading the payment provider's counts: %w", err)
		}
		paid = since(paidBefore, after)
	}
	owners := lookupOwners(vctx, c, setup, phantomBookings(records, before, final.seats))
	lin := checkLinearizable(histories(records, before, final, owners), cfg.checkTimeout)

	rep := &report{
		Scenario:       cfg.scenario,
		Targets:        cfg.targets,
		Strategy:       first.Lock,
		Guard:          first.Guard,
		PaymentDelayMS: first.PaymentDelayMS,
		Mode:           "closed",
		Clients:        cfg.clients,
		Rate:           cfg.rate,
		counts:         count(records, before, final.seats, owners),
		Linearizable:   lin.verdict,

		NonLinearizableSeats: lin.seats,

		Watchers:       cfg.watchers,
		EventsReceived: events,
		WatchersCut:    cut,
		Payments:       paid,
	}
	if cfg.rate > 0 {
		rep.Mode = "open"
	}
	for _, s := range screenings {
		rep.Screenings = append(rep.Screenings, s.ID)
	}
	rep.summarize(records, wall)
	return rep, nil
}

// prepareScreening returns the first screening of the run and its seat
// map before the run: the one named by -screening, or a fresh, empty one.
func prepareScreening(ctx context.Context, c *client, target string, cfg config) (*screening, seatMap, error) {
	if cfg.screening != "" {
		s, err := c.screening(ctx, target, cfg.screening)
		if isStatus(err, http.StatusNotFound) {
			return nil, nil, usagef("screening %q does not exist on %s", cfg.screening, target)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading screening %q: %w", cfg.screening, err)
		}
		if s.capacity() < 1 {
			return nil, nil, fmt.Errorf("screening %q has no seats", s.ID)
		}
		snap, err := readSeats(ctx, c, target, []*screening{s}, time.Now())
		if err != nil {
			return nil, nil, fmt.Errorf("reading the seats of screening %q: %w", s.ID, err)
		}
		return s, snap.seats, nil
	}

	req := createScreening{
		Movie:       "loadgen " + cfg.scenario,
		Rows:        maxRows,
		SeatsPerRow: maxSeatsPerRow,
		Lock:        cfg.lock,
		Guard:       cfg.guard,
	}
	if cfg.hasPaymentDelay && cfg.scenario != scenarioHold { // hold pays on the client's side
		ms := cfg.paymentDelay.Milliseconds()
		req.PaymentDelayMS = &ms
	}
	if cfg.holdTTL > 0 {
		ms := cfg.holdTTL.Milliseconds()
		req.HoldTTLMS = &ms
	}
	s, err := create(ctx, c, target, req)
	if err != nil {
		return nil, nil, err
	}
	return s, seatMap{}, nil
}

// createLike creates one more screening with the settings of first, for
// scenarios that run out of seats.
func createLike(ctx context.Context, c *client, target, scenario string, first *screening) (*screening, error) {
	delay := first.PaymentDelayMS
	return create(ctx, c, target, createScreening{
		Movie:          "loadgen " + scenario,
		Rows:           maxRows,
		SeatsPerRow:    maxSeatsPerRow,
		Lock:           first.Lock,
		Guard:          first.Guard,
		PaymentDelayMS: &delay,
	})
}

// create creates a screening and turns the answers a run cannot go on from
// into errors that say what to do.
func create(ctx context.Context, c *client, target string, req createScreening) (*screening, error) {
	s, err := c.createScreening(ctx, target, req)
	var se *statusError
	switch {
	case errors.As(err, &se) && se.status == http.StatusBadRequest:
		return nil, &refusedError{lock: req.Lock, guard: req.Guard, message: se.message}
	case errors.As(err, &se) && (se.status == http.StatusUnauthorized || se.status == http.StatusForbidden):
		return nil, usagef("%s refused to create a screening (%v): set -admin-token or $ADMIN_TOKEN", target, err)
	case err != nil:
		return nil, fmt.Errorf("creating a screening on %s: %w", target, err)
	case s.capacity() < 1:
		return nil, fmt.Errorf("screening %q created on %s has no seats", s.ID, target)
	}
	return s, nil
}

// newRunID returns 8 random hex digits that make this run's customer names
// unique among all runs against the same database.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}

// progress draws a live progress bar on a terminal. Its zero value draws
// nothing.
type progress struct {
	w io.Writer // where to draw; nil = no bar
}

// newProgress returns a progress that draws on stderr when stderr is a
// terminal and the report is not JSON.
func newProgress(cfg config, stderr io.Writer) progress {
	f, ok := stderr.(*os.File)
	if cfg.jsonOutput || !ok || !term.IsTerminal(int(f.Fd())) {
		return progress{}
	}
	return progress{w: stderr}
}

// start begins a bar for total requests (-1 when the run is timed): tick
// counts one request and is safe for concurrent use, finish ends the bar.
func (p progress) start(total int64, description string) (tick func(), finish func()) {
	if p.w == nil {
		return nil, func() {}
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth(),
		progressbar.OptionClearOnFinish(),
		// Without this a bar of unknown length starts its own goroutine
		// to animate the spinner, which nobody would stop.
		progressbar.OptionSetSpinnerChangeInterval(0),
	)
	return func() { _ = bar.Add(1) }, func() { _ = bar.Finish(); _ = bar.Clear() }
}
