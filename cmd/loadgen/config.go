package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Scenario names accepted by -scenario.
const (
	scenarioHot    = "hot"
	scenarioSpread = "spread"
	scenarioMixed  = "mixed"
	scenarioMulti  = "multi"
	// scenarioHold and scenarioBest are in holds.go.
	// scenarioHealthz is the calibration scenario: GET /healthz, nothing
	// booked, nothing verified. It measures how fast loadgen itself can
	// send, to compare with a tool such as wrk on the same endpoint.
	scenarioHealthz = "healthz"
)

// config is everything one run needs, parsed and validated from the command
// line. Its zero value is not useful: build it with parseFlags.
type config struct {
	targets  []string // API base URLs without a trailing slash
	scenario string
	clients  int
	rate     float64 // requests per second; 0 = closed loop

	// requests and duration stop the run; see stopByRequests.
	requests int
	duration time.Duration
	// stopByRequests is false when only -duration was given: the run then
	// goes on until the time is up, however many requests that takes.
	stopByRequests bool

	seats     int    // hot seats, for the hot scenario
	pin       bool   // each client sends to one target, not each request
	screening string // existing screening to use; empty = create one

	// lock, guard and paymentDelay describe the screening the run creates.
	// Empty (or hasPaymentDelay false) means "leave it out of the create
	// request", so the server's own defaults apply.
	lock            string
	guard           string
	paymentDelay    time.Duration
	hasPaymentDelay bool

	adminToken   string
	jsonOutput   bool
	htmlFile     string        // -html: also write a self-contained HTML report here
	timeout      time.Duration // per HTTP request
	checkTimeout time.Duration // budget of the linearizability check
	seed         uint64        // 0 = random
	watchers     int           // -watchers: event streams held open during the run
	payments     string        // -payments: base URL of the payment provider; empty = none
	settleWait   time.Duration // -settle-wait: how long the ledger may take to balance after the run
	wide         bool          // -wide (compare): every column, the whole verdict on each row
	abandon      float64       // -abandon: share of holds never confirmed (hold)
	holdTTL      time.Duration // -hold-ttl: hold length of the created screening; 0 = the server's
	faultsFile   string        // -faults: file of fault windows, read after the run; empty = none
	thresholds   []thresholdSpec

	// The onsale scenario (onsale.go): buyers (0 = ten per seat)
	// arriving within spike, a waiting room admitting queueRate a second
	// (0 = none) on a screening of rows x seatsPerRow.
	buyers            int
	spike             time.Duration
	queueRate         int
	rows, seatsPerRow int
}

// usageError is a problem with how loadgen was called or with reaching the
// targets: main maps it to exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef builds a usageError.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// optionalDuration is a flag.Value that remembers whether it was set, so an
// unset -payment-delay can be left out of the request instead of sent as 0.
type optionalDuration struct {
	d   time.Duration
	set bool
}

func (o *optionalDuration) String() string {
	if o == nil || !o.set {
		return ""
	}
	return o.d.String()
}

func (o *optionalDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	o.d, o.set = d, true
	return nil
}

// parseFlags reads the flags of one run (compare tells it which command it
// parses for). It returns flag.ErrHelp for -h, and a *usageError, on one
// line, for anything wrong.
func parseFlags(name string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package would print the error and the whole usage text; a bad
	// flag should be one line, so errors are reported by the caller and the
	// usage text only by -h.
	fs.SetOutput(io.Discard)
	var cfg config
	raw := declareFlags(fs, &cfg, getenv)
	if err := parseArgs(fs, args, stderr); err != nil {
		return config{}, err
	}

	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// -duration alone replaces the request count; both given means
	// whichever comes first.
	cfg.stopByRequests = cfg.duration == 0 || set["requests"]
	cfg.paymentDelay, cfg.hasPaymentDelay = raw.paymentDelay.d, raw.paymentDelay.set
	if (cfg.scenario == scenarioHold || cfg.scenario == scenarioOnSale) && !set["hold-ttl"] {
		cfg.holdTTL = defaultHoldTTL
	}
	cfg.thresholds = raw.thresholds()
	switch {
	case set["settle-wait"] && cfg.payments == "":
		return config{}, usagef("-settle-wait: needs -payments, the provider whose ledger it waits for")
	case set["abandon"] && cfg.scenario != scenarioHold && cfg.scenario != scenarioOnSale:
		return config{}, usagef("-abandon: only the hold and onsale scenarios abandon holds, not %s", cfg.scenario)
	}
	if err := onsaleFlags(&cfg, raw.layout, set); err != nil {
		return config{}, err
	}

	var err error
	if cfg.targets, err = parseTargets(raw.targets); err != nil {
		return config{}, err
	}
	if cfg.payments != "" {
		urls, err := parseTargets(cfg.payments)
		if err != nil || len(urls) != 1 {
			return config{}, usagef("-payments: %q is not one http(s) base URL", cfg.payments)
		}
		cfg.payments = urls[0]
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	if err := checkFaults(cfg.faultsFile); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// rawFlags are the flags whose values parseFlags turns into cfg's.
type rawFlags struct {
	targets      string
	layout       string
	paymentDelay optionalDuration
	thresholds   func() []thresholdSpec
}

// declareFlags declares every flag of a run on fs, into cfg and the raw
// values it returns.
func declareFlags(fs *flag.FlagSet, cfg *config, getenv func(string) string) *rawFlags {
	raw := &rawFlags{}
	fs.StringVar(&raw.targets, "targets", "http://127.0.0.1:8080", "comma-separated API base URLs; requests are spread round-robin")
	fs.StringVar(&cfg.scenario, "scenario", scenarioHot, "hot, spread, mixed, multi, best, hold, onsale, or healthz (calibration: GET /healthz, no verification)")
	fs.IntVar(&cfg.clients, "clients", 64, "concurrent clients (closed loop); with -rate, the most requests in flight")
	fs.Float64Var(&cfg.rate, "rate", 0, "requests per second, open loop (0 = closed loop)")
	fs.IntVar(&cfg.requests, "requests", 2000, "stop after this many requests")
	fs.DurationVar(&cfg.duration, "duration", 0, "stop after this long (alone, it replaces -requests)")
	fs.IntVar(&cfg.seats, "seats", 4, "hot seats for the hot scenario")
	fs.BoolVar(&cfg.pin, "pin-clients", false, "client c sends all its requests to target c mod targets (as a balancer that keeps each client's connection on one instance), instead of request i to target i mod targets")
	fs.StringVar(&cfg.screening, "screening", "", "use this screening; empty = create a fresh one")
	fs.StringVar(&cfg.lock, "lock", "", "lock strategy of the created screening (default: the server's)")
	fs.StringVar(&cfg.guard, "guard", "", "write guard of the created screening (default: the server's)")
	fs.Var(&raw.paymentDelay, "payment-delay", "payment delay of the created screening (default: the server's)")
	fs.StringVar(&cfg.adminToken, "admin-token", getenv("ADMIN_TOKEN"), "bearer token for POST /v1/screenings (default $ADMIN_TOKEN)")
	fs.BoolVar(&cfg.jsonOutput, "json", false, "print the report as JSON on stdout")
	fs.StringVar(&cfg.htmlFile, "html", "", "also write a self-contained HTML report (latency plot; charts per strategy for compare) to this file")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "timeout of one HTTP request")
	fs.DurationVar(&cfg.checkTimeout, "check-timeout", 10*time.Second, "time budget of the linearizability check")
	fs.Uint64Var(&cfg.seed, "seed", 0, "seed of the seat choices (0 = random)")
	fs.StringVar(&cfg.payments, "payments", "", "base URL of the payment provider the APIs charge through (loadgen payments); adds its charges, refunds and overlaps to the report, and checks that charges - refunds = confirmed bookings")
	fs.DurationVar(&cfg.settleWait, "settle-wait", defaultSettleWait, "with -payments: how long to wait after the run for charges - refunds to equal the confirmed bookings before the ledger fails (0 = read it once)")
	fs.Float64Var(&cfg.abandon, "abandon", 0.1, "hold: share of holds never confirmed, 0 to 1 (the payer walks away)")
	fs.DurationVar(&cfg.holdTTL, "hold-ttl", 0, "hold length of the created screening (default: 5s for hold, else the server's)")
	fs.StringVar(&cfg.faultsFile, "faults", "", "file of fault windows, one JSON line each ({\"name\",\"start\",\"end\"}, RFC 3339), appended by whoever injects faults; read after the run and marked on its timeline")
	fs.IntVar(&cfg.buyers, "buyers", 0, "onsale: buyers arriving (default 10 per seat of the screening)")
	fs.DurationVar(&cfg.spike, "spike", 2*time.Second, "onsale: the buyers arrive evenly within this long")
	fs.IntVar(&cfg.queueRate, "queue-rate", 0, "onsale: create the screening with a waiting room admitting this many buyers a second (0 = no waiting room: every buyer races for holds)")
	fs.StringVar(&raw.layout, "layout", defaultLayout, "onsale: rows x seats per row of the created screening")
	fs.IntVar(&cfg.watchers, "watchers", 0, "open this many seat-map event streams on the run's screenings during the run, and count their events")
	raw.thresholds = thresholdFlags(fs)
	if fs.Name() == "loadgen compare" {
		fs.BoolVar(&cfg.wide, "wide", false, "print every column and each strategy's whole verdict on its row, however wide (default: at most 120 columns, the rest in notes under the table)")
	}
	return raw
}

// validate checks the values that flag parsing alone cannot.
func (c *config) validate() error {
	switch c.scenario {
	case scenarioHot, scenarioSpread, scenarioMixed, scenarioMulti, scenarioHealthz, scenarioHold, scenarioBest, scenarioOnSale:
	default:
		return usagef("-scenario %q: want hot, spread, mixed, multi, best, hold, onsale or healthz", c.scenario)
	}
	switch {
	case c.clients < 1:
		return usagef("-clients %d: want at least 1", c.clients)
	case c.rate < 0:
		return usagef("-rate %v: must not be negative", c.rate)
	case c.stopByRequests && c.requests < 1:
		return usagef("-requests %d: want at least 1", c.requests)
	case c.duration < 0:
		return usagef("-duration %v: must not be negative", c.duration)
	case c.seats < 1 || c.seats > maxSeatsPerScreening:
		return usagef("-seats %d: want 1 to %d", c.seats, maxSeatsPerScreening)
	case c.timeout <= 0:
		return usagef("-timeout %v: must be positive", c.timeout)
	case c.checkTimeout <= 0:
		return usagef("-check-timeout %v: must be positive", c.checkTimeout)
	case c.settleWait < 0:
		return usagef("-settle-wait %v: must not be negative", c.settleWait)
	case c.watchers < 0:
		return usagef("-watchers %d: must not be negative", c.watchers)
	case c.abandon < 0 || c.abandon > 1:
		return usagef("-abandon %v: want a share from 0 to 1", c.abandon)
	case c.holdTTL != 0 && (c.holdTTL < time.Second || c.holdTTL > time.Hour):
		return usagef("-hold-ttl %v: want 1s to 1h", c.holdTTL)
	case c.rate > 0 && (c.scenario == scenarioHold || c.scenario == scenarioBest || c.scenario == scenarioOnSale):
		return usagef("-rate: the %s scenario runs closed loop only", c.scenario)
	case c.watchers > 0 && c.scenario == scenarioHealthz:
		return usagef("-watchers: the healthz scenario has no screening to watch")
	case c.payments != "" && c.scenario == scenarioHealthz:
		return usagef("-payments: the healthz scenario books nothing to pay for")
	}
	for _, t := range c.thresholds {
		if t.kind.figure == "overlaps" || t.kind.figure == "refunds" {
			if c.payments == "" {
				return usagef("-%s: needs -payments, the provider that counts the %s", t.kind.flag, t.kind.figure)
			}
		}
	}
	return nil
}

// parseTargets splits -targets and checks that each is an http(s) base URL.
func parseTargets(s string) ([]string, error) {
	var targets []string
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimRight(strings.TrimSpace(t), "/")
		if t == "" {
			continue
		}
		u, err := url.Parse(t)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("-targets: %q is not an http(s) base URL", t)
		}
		targets = append(targets, t)
	}
	if len(targets) == 0 {
		return nil, usagef("-targets: no target given")
	}
	return targets, nil
}

// parseArgs parses the flags of a command, fs named after it ("loadgen
// payments"): -h prints its usage and returns flag.ErrHelp; a bad flag or
// an argument after the flags is a usage error.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, fs.Name(), stderr)
			return flag.ErrHelp
		}
		return usagef("%v (see %s -h)", err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (see %s -h)", fs.Arg(0), fs.Name())
	}
	return nil
}

// serverFlags returns the flag set of a subcommand that serves on -addr
// (payments, gate), silent like parseFlags' own, and its -addr flag.
func serverFlags(name, defaultAddr string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, fs.String("addr", defaultAddr, "listen address")
}

func printUsage(fs *flag.FlagSet, name string, w io.Writer) {
	fmt.Fprintf(w, "usage:\n  loadgen [flags]           run one scenario, verify, report\n  loadgen compare [flags]   the same scenario under every strategy, one table\n  loadgen payments [flags]  the in-memory payment provider\n  loadgen gate [flags]      a TCP proxy that holds what clients send, on a signal\n\nflags of %s:\n", name)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
