package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seatlock/seatlock/internal/cluster"
	"github.com/seatlock/seatlock/payment"
)

// nemesisConfig is the flags of loadgen nemesis.
type nemesisConfig struct {
	total          time.Duration
	kinds          []string
	kindsGiven     bool // -faults was given: a fault that cannot run is an error, not skipped
	seed           uint64
	out            string
	clients        int
	lock, guard    string
	reconcileEvery time.Duration
	paymentDelay   time.Duration
	settle         time.Duration
	checkTimeout   time.Duration
	commit         string // of the tree the cluster is built from, read before building
}

// parseNemesisFlags reads the flags of loadgen nemesis.
func parseNemesisFlags(args []string, stderr io.Writer) (nemesisConfig, error) {
	var cfg nemesisConfig
	fs := flag.NewFlagSet("loadgen nemesis", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.DurationVar(&cfg.total, "time", 60*time.Second, "how long the load and the faults run")
	faults := fs.String("faults", "all", "comma list of the faults to draw from: "+strings.Join(faultKinds, ","))
	seed := fs.String("seed", "", "seed of the fault schedule and the workload (default: random, printed)")
	fs.StringVar(&cfg.out, "out", "nemesis-out", "directory for history.jsonl, report.json and report.html")
	fs.IntVar(&cfg.clients, "clients", 16, "concurrent clients")
	fs.StringVar(&cfg.lock, "lock", "", "lock strategy of the screenings (default: the server's, keyed+redis)")
	fs.StringVar(&cfg.guard, "guard", "", "write guard of the screenings (default: the server's, fence); off needs no more than this flag: the nemesis starts its instances in demo mode then")
	fs.DurationVar(&cfg.reconcileEvery, "reconcile-every", 2*time.Second, "RECONCILE_EVERY of the instances: how often a reconciler settles payments left open; 0: no reconciler")
	fs.DurationVar(&cfg.paymentDelay, "payment-delay", 20*time.Millisecond, "payment time inside the critical section")
	fs.DurationVar(&cfg.settle, "settle", 30*time.Second, "longest wait, after the load, for the ledger to settle")
	fs.DurationVar(&cfg.checkTimeout, "check-timeout", 2*time.Minute, "time budget of the linearizability check (a 10-minute run records about half a million operations)")
	if err := parseArgs(fs, args, stderr); err != nil {
		return cfg, err
	}
	fs.Visit(func(f *flag.Flag) { cfg.kindsGiven = cfg.kindsGiven || f.Name == "faults" })
	var err error
	if cfg.kinds, err = parseFaultKinds(*faults); err != nil {
		return cfg, err
	}
	if cfg.seed, err = parseSeed(*seed); err != nil {
		return cfg, err
	}
	if cfg.total < 10*time.Second || cfg.clients < 1 || cfg.checkTimeout <= 0 {
		return cfg, usagef("nemesis: -time must be at least 10s, -clients at least 1 and -check-timeout positive")
	}
	return cfg, nil
}

// parseSeed reads -seed; empty draws one.
func parseSeed(s string) (uint64, error) {
	if s == "" {
		return rand.Uint64N(1 << 53), nil // printable exactly as a JSON number
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, usagef("nemesis: -seed: want a whole number, got %q", s)
	}
	return n, nil
}

// errCouldNotRun wraps what kept the nemesis from running or finishing
// its checks: exit status 2.
var errCouldNotRun = errors.New("nemesis: could not run")

// runNemesis is loadgen nemesis: it starts a cluster, runs the workload
// under the fault schedule, checks the history and writes the report.
func runNemesis(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseNemesisFlags(args, stderr)
	if err != nil {
		return err
	}
	// A nemesis killed before it could clean up (SIGKILL) left its
	// directories behind; its servers died with it.
	removed, err := cluster.RemoveOrphans()
	for _, dir := range removed {
		fmt.Fprintf(stderr, "nemesis: removed %s, left by a nemesis that was killed\n", dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nemesis: %v\n", err)
	}
	work, err := cluster.TempDir("nemesis-")
	if err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	defer os.RemoveAll(work)
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	cfg.commit = commit()
	clockLib, err := cfg.clockLibrary(work, stderr)
	if err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	schedule := makeSchedule(cfg.seed, cfg.kinds, cfg.total, nemesisInstances)
	fmt.Fprintf(stderr, "nemesis: seed %d, %d faults from %s over %v, schedule_sha256 %s\n",
		cfg.seed, len(schedule), strings.Join(cfg.kinds, ","), cfg.total, scheduleHash(schedule))
	bin, err := cluster.BuildAPI(ctx, work)
	if err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	fences := &fenceLog{byBooking: map[string]map[string]int64{}}
	c, err := cluster.Start(ctx, cluster.Options{Dir: work, APIBinary: bin, Instances: nemesisInstances,
		Env: cfg.apiEnv(), ClockLibrary: clockLib, SeeCharge: fences.see})
	if err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	defer c.Stop()
	rep, err := nemesisRun(ctx, cfg, c, schedule, fences, stderr)
	if err != nil {
		return fmt.Errorf("%w: %w", errCouldNotRun, err)
	}
	return finishNemesis(cfg, rep, stdout)
}

// nemesisInstances is the number of API instances of the cluster.
const nemesisInstances = 3

// clockLibrary builds the clock library when the clock fault may be
// drawn. Without a C compiler the fault is left out of a default run, with
// a note, and is an error when -faults asked for it.
func (cfg *nemesisConfig) clockLibrary(dir string, stderr io.Writer) (string, error) {
	if !slices.Contains(cfg.kinds, "clock") {
		return "", nil
	}
	lib, err := cluster.BuildClockLibrary(dir)
	if errors.Is(err, cluster.ErrNoCompiler) && !cfg.kindsGiven {
		fmt.Fprintln(stderr, "nemesis: no C compiler: the clock fault is left out (apt-get install gcc)")
		cfg.kinds = slices.DeleteFunc(cfg.kinds, func(k string) bool { return k == "clock" })
		return "", nil
	}
	return lib, err
}

// apiEnv is the environment of every instance.
func (cfg nemesisConfig) apiEnv() map[string]string {
	env := map[string]string{
		"RECONCILE_EVERY": cfg.reconcileEvery.String(),
		"DB_MAX_CONNS":    "4",
		"LOCK_WAIT":       "2s",
	}
	if cfg.lock == "none" || cfg.guard == "off" {
		env["DEMO_MODE"] = "true"
	}
	return env
}

// fenceLog keeps the fences of every charge the provider saw, by booking.
type fenceLog struct {
	mu        sync.Mutex // protects byBooking: the provider's handlers write, the report reads
	byBooking map[string]map[string]int64
}

func (f *fenceLog) see(req payment.ChargeRequest) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byBooking[req.BookingID] = req.Fences
}

func (f *fenceLog) of(bookingID string) map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byBooking[bookingID]
}
