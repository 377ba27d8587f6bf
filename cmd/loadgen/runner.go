package main

import (
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
		err := retryStartup(ctx, startupWait, func(ctx context.Context) error { return c.health(ctx, t) })
		if err != nil {
			return nil, usagef("target %s is unreachable (waited %v): %v", t, startupWait, err)
		}
	}
	var rep *report
	var err error
	if cfg.scenario == scenarioHealthz {
		rep, err = runHealthz(ctx, c, cfg, p)
	} else {
		rep, err = runBookings(ctx, c, cfg, p)
	}
	if err != nil {
		return nil, err
	}
	rep.judge(cfg.thresholds)
	return rep, nil
}

// runBookings runs a scenario that books: it prepares the screenings,
// sends the load, then verifies the result from the answers and the final
// seat map.
func runBookings(ctx context.Context, c *client, cfg config, p progress) (*report, error) {
	sr, err := prepareRun(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	obs, err := sr.observe(ctx)
	if err != nil {
		return nil, err
	}
	records, start, wall, err := sr.load(ctx, p)
	obs.stop()
	if err != nil {
		return nil, err
	}
	return sr.verify(ctx, obs, records, start, wall)
}

// scenarioRun is one run of a booking scenario, from its set-up to its
// report: runScenario calls its steps in order.
type scenarioRun struct {
	cfg config
	c   *client
	// setup is the target that creates the screenings and is read for
	// verification: with one shared database every instance sees the same
	// screenings.
	setup  string
	first  *screening // the first screening of the run; the others are like it
	before seatMap    // who held the seats of first before the run
	pool   *screeningPool
	seed   uint64
	runID  string // makes the run's customer names unique across runs

	newSender func(c int) sender // the sender of client c
	onsale    *onsale            // the buyers' shared state, in onsale; nil in the others
}

// prepareRun prepares the screenings and the senders of cfg's scenario
// before the clock starts.
func prepareRun(ctx context.Context, c *client, cfg config) (*scenarioRun, error) {
	sr := &scenarioRun{cfg: cfg, c: c, setup: cfg.targets[0], seed: cfg.seed, runID: newRunID()}
	var err error
	if sr.first, sr.before, err = prepareScreening(ctx, c, sr.setup, cfg); err != nil {
		return nil, err
	}
	sr.pool = newScreeningPool(sr.first, func(ctx context.Context) (*screening, error) {
		return createLike(ctx, c, sr.setup, cfg.scenario, sr.first)
	})
	if cfg.scenario == scenarioSpread && cfg.stopByRequests {
		// Create every screening the run needs before the clock starts.
		if _, _, err := sr.pool.locate(ctx, cfg.requests-1); err != nil {
			return nil, err
		}
	}
	if sr.seed == 0 {
		sr.seed = mathrand.Uint64()
	}
	if cfg.scenario == scenarioOnSale {
		sr.onsale = newOnsale(c, sr.first, sr.before, &sr.cfg, sr.runID)
	}
	if sr.newSender, err = sr.senders(); err != nil {
		return nil, err
	}
	return sr, nil
}

// tickets reports whether the run is of a ticketing scenario (holds.go,
// onsale.go).
func (sr *scenarioRun) tickets() bool {
	switch sr.cfg.scenario {
	case scenarioHold, scenarioBest, scenarioOnSale:
		return true
	}
	return false
}

// holdsPaidByClient reports whether the run's buyers hold seats and pay on
// their own side before confirming: the screening's payment delay is then
// not the payment's, and the API charges at the confirm.
func (sr *scenarioRun) holdsPaidByClient() bool {
	return sr.cfg.scenario == scenarioHold || sr.cfg.scenario == scenarioOnSale
}

// senders returns what makes the sender of each client: a booking of the
// seats the scenario's picker chooses, or a ticket of the hold and best
// scenarios, which keeps per client what the sold-out answers taught it.
func (sr *scenarioRun) senders() (func(int) sender, error) {
	cfg := sr.cfg
	if sr.onsale != nil {
		return func(int) sender { return sr.onsale }, nil
	}
	if sr.tickets() {
		return func(int) sender {
			return &ticketSender{client: sr.c, scenario: cfg.scenario, screening: sr.first.ID, targets: cfg.targets,
				runID: sr.runID, abandon: cfg.abandon, pay: cfg.paymentDelay}
		}, nil
	}
	p, err := newPicker(cfg.scenario, sr.pool, cfg.seats, len(cfg.targets), sr.seed)
	if err != nil {
		return nil, err
	}
	bs := bookingSender{client: sr.c, picker: p, runID: sr.runID}
	return func(int) sender { return bs }, nil
}

// observers watch a run from the side: open seat-map pages (-watchers)
// and the payment provider's counts (-payments).
type observers struct {
	watching   *watchers     // nil without -watchers
	paidBefore providerStats // the provider's counts when the run started
	beforeAt   time.Time     // when paidBefore was read
	polling    *statsPoller  // the provider's counts during the run; nil without -payments

	events, cut int64 // what the watchers saw, once stop has returned
}

// observe starts the observers of the run. Open pages watch every
// screening the run has so far (for spread with -requests, every one it
// will use) before the clock starts.
func (sr *scenarioRun) observe(ctx context.Context) (*observers, error) {
	obs := &observers{}
	// The provider's counts are read before and after the run: the run's
	// own are the difference.
	if sr.cfg.payments != "" {
		err := retryStartup(ctx, startupWait, func(ctx context.Context) (err error) {
			obs.paidBefore, err = sr.c.paymentStats(ctx, sr.cfg.payments)
			return err
		})
		if err != nil {
			return nil, usagef("payment provider %s is unreachable (waited %v): %v", sr.cfg.payments, startupWait, err)
		}
		obs.beforeAt = time.Now()
		obs.polling = pollStats(ctx, sr.c, sr.cfg.payments)
	}
	if sr.cfg.watchers > 0 {
		var ids []string
		for _, s := range sr.pool.all() {
			ids = append(ids, s.ID)
		}
		var err error
		if obs.watching, err = startWatchers(ctx, sr.cfg.watchers, sr.cfg.targets, ids); err != nil {
			obs.stop()
			return nil, err
		}
	}
	return obs, nil
}

// stop ends the observers that run beside the load and waits for them.
func (obs *observers) stop() {
	if obs.polling != nil {
		obs.polling.stop()
	}
	if obs.watching != nil {
		// The last events of the run are still on their way: give them a
		// moment (the server publishes from a queue) before closing.
		time.Sleep(watcherGrace)
		obs.events, obs.cut = obs.watching.stop()
		obs.watching = nil
	}
}

// load sends the requests of the run and returns what the driver saw.
func (sr *scenarioRun) load(ctx context.Context, p progress) ([]record, time.Time, time.Duration, error) {
	total := int64(-1)
	if sr.cfg.stopByRequests {
		total = int64(sr.cfg.requests)
	}
	description := sr.first.Lock + "/" + sr.first.Guard
	if sr.tickets() {
		description += " " + sr.cfg.scenario
	}
	tick, finish := p.start(total, description)
	defer finish()
	d := &driver{
		targets:   sr.cfg.targets,
		pin:       sr.cfg.pin,
		clients:   sr.cfg.clients,
		rate:      sr.cfg.rate,
		duration:  sr.cfg.duration,
		newSender: sr.newSender,
		seed:      sr.seed,
		progress:  tick,
	}
	if sr.cfg.stopByRequests {
		d.requests = sr.cfg.requests
	}
	return d.run(ctx)
}

// verify reads the final state (seat maps, the provider's counts, the
// owners of bookings no 201 named), checks the run against it and returns
// the report. It goes on after Ctrl-C, within verifyTimeout, so that an
// interrupted run is still verified as far as it went.
//
// The bookings verified are the 201 answers, except in hold, whose
// bookings are its confirms: its holds are checked apart (holds.go).
func (sr *scenarioRun) verify(ctx context.Context, obs *observers, records []record, start time.Time, wall time.Duration) (*report, error) {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), verifyTimeout+sr.cfg.settleWait)
	defer cancel()
	buyers := records
	if sr.onsale != nil {
		records = holdAttempts(buyers)
	}
	bookings, holds := records, (*holdCounts)(nil)
	if sr.tickets() {
		bookings, holds = ticketBookings(vctx, sr.cfg.scenario, records)
	}
	final, err := readSeats(vctx, sr.c, sr.setup, sr.pool.all(), start)
	if err != nil {
		return nil, fmt.Errorf("reading the final seat map: %w", err)
	}
	var statuses []seatState
	if holds != nil {
		if statuses, err = checkTickets(vctx, sr.c, sr.setup, sr.first, holds, sr.cfg.scenario, records); err != nil {
			return nil, err
		}
	}
	owners := lookupOwners(vctx, sr.c, sr.setup, phantomBookings(bookings, sr.before, final.seats))
	placeUnnamed(bookings, final.seats, owners)
	rep := sr.newReport(records, wall)
	rep.counts = count(bookings, sr.before, final.seats, owners)
	rep.Holds = holds
	if sr.onsale != nil {
		rep.OnSale = onsaleFigures(sr.onsale, buyers, statuses, wall)
	}
	rep.Watchers, rep.EventsReceived, rep.WatchersCut = sr.cfg.watchers, obs.events, obs.cut

	// Charges for bookings that were overwritten never balance: the
	// ledger of a run that lost bookings is read once, not waited for.
	wait := sr.cfg.settleWait
	if rep.LostBookings > 0 || ctx.Err() != nil {
		wait = 0
	}
	var samples []overlapSample
	if rep.Payments, samples, err = sr.payments(vctx, obs, start, wall, wait); err != nil {
		return nil, err
	}
	if rep.Timeline, err = runTimeline(sr.cfg, records, start, wall, samples); err != nil {
		return nil, err
	}
	if sr.onsale != nil && sr.onsale.queued {
		addQueue(rep.Timeline, buyers)
	}
	lin := checkLinearizable(histories(bookings, sr.before, final, owners), sr.cfg.checkTimeout)
	rep.Linearizable, rep.NonLinearizableSeats = lin.verdict, lin.seats
	return rep, nil
}

// newReport starts the report of the run with what was sent: the
// screenings, the counts of the answers, throughput and latency.
func (sr *scenarioRun) newReport(records []record, wall time.Duration) *report {
	rep := newReport(sr.cfg)
	rep.Strategy, rep.Guard, rep.PaymentDelayMS = sr.first.Lock, sr.first.Guard, sr.first.PaymentDelayMS
	for _, s := range sr.pool.all() {
		rep.Screenings = append(rep.Screenings, s.ID)
	}
	// In hold and onsale, parallelism is over the critical sections of
	// the hold requests, which pay nothing inside the lock.
	rep.summarize(records, wall)
	if sr.holdsPaidByClient() {
		rep.PaymentDelayMS = sr.cfg.paymentDelay.Milliseconds() // paid on the client's side
	}
	return rep
}

// payments settles the run's ledger, waiting for it at most wait (nil
// without -payments), and returns the overlaps the provider saw during
// the run, for the timeline.
func (sr *scenarioRun) payments(ctx context.Context, obs *observers, start time.Time, wall, wait time.Duration) (*paymentCounts, []overlapSample, error) {
	if sr.cfg.payments == "" {
		return nil, nil, nil
	}
	reads := ledgerReads{
		stats: func(ctx context.Context) (providerStats, error) { return sr.c.paymentStats(ctx, sr.cfg.payments) },
		confirmed: func(ctx context.Context) (int, error) {
			snap, err := readSeats(ctx, sr.c, sr.setup, sr.pool.all(), start)
			return confirmedBookings(snap.seats, sr.before), err
		},
	}
	if sr.holdsPaidByClient() {
		reads.notCharging = notChargingHold
	}
	paid, err := settleLedger(ctx, reads, obs.paidBefore, wait)
	if err != nil {
		return nil, nil, err
	}
	samples := obs.polling.overlapSamples(start,
		overlapSample{at: obs.beforeAt.Sub(start), overlaps: obs.paidBefore.Overlaps},
		overlapSample{at: wall, overlaps: obs.paidBefore.Overlaps + paid.Overlaps})
	return paid, samples, nil
}

// runTimeline builds the timeline of a run, with the fault windows of
// -faults.
func runTimeline(cfg config, records []record, start time.Time, wall time.Duration, samples []overlapSample) (*timeline, error) {
	var faults []faultWindow
	if cfg.faultsFile != "" {
		var err error
		if faults, err = faultWindows(cfg.faultsFile, start, wall); err != nil {
			return nil, err
		}
	}
	return newTimeline(records, wall, samples, faults), nil
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
	paidByClient := cfg.scenario == scenarioHold || cfg.scenario == scenarioOnSale
	if cfg.scenario == scenarioOnSale {
		req.Rows, req.SeatsPerRow = cfg.rows, cfg.seatsPerRow
		if cfg.queueRate > 0 {
			req.Queue = &queueSettings{AdmitPerS: cfg.queueRate}
		}
	}
	if cfg.hasPaymentDelay && !paidByClient { // hold and onsale pay on the client's side
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
