package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
)

// config is the server's configuration; the README lists every setting.
type config struct {
	Addr         string
	DatabaseURL  string // empty: the in-memory store
	RedisURL     string // empty: an embedded Redis server
	Lock         reservation.Strategy
	Guard        reservation.Guard
	LockTTL      time.Duration
	LockWait     time.Duration
	PaymentDelay time.Duration
	HoldTTL      time.Duration
	Demo         bool
	AdminToken   string
	PaymentURL   string // empty: the simulated payment (a wait)
	// ReconcileEvery is how often the payment reconciler looks for
	// payments left open (with PaymentURL); zero runs no reconciler, which
	// only a demonstration of what it is for wants.
	ReconcileEvery time.Duration
	DBMaxConns     int // Postgres connections of this instance, all pools together

	// Healthcheck asks a running server (at Addr) for /healthz instead of
	// serving: a command, so a flag only, never an environment variable,
	// which could turn every server of a deployment into a check.
	Healthcheck bool

	MaxScreenings int     // most screenings the store may hold
	PprofAddr     string  // listen address of the profiling endpoints; empty: none
	WriteRate     float64 // writes a second this instance accepts; 0: no bound

	// The lock backends beyond Redis (see openOtherLockers).
	LockDir          string   // file locks; default under the temp directory
	RedlockURLs      []string // empty: no redlock strategy
	ZooKeeperServers []string // empty: no zookeeper strategy

	// RedisWaitReplicas is how many replicas must acknowledge a Redis lock
	// before it is granted (distlock.RedisOptions.WaitReplicas); 0: none.
	RedisWaitReplicas int
	// RedisAddrMap is the Redis addresses to dial instead of others
	// (REDIS_ADDR_MAP); empty: each as it is named.
	RedisAddrMap addrMap
}

// configError is a bad flag or environment variable. main exits with
// status 2 for it, as for any usage error.
type configError struct {
	err error
}

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// minLockTTL keeps the lease long enough for the service to stop in time:
// every lock with a lease is declared lost reservation.StopTime before the
// server could end it (the lockers' StopMargin), and the lockers want that
// margin and their drift allowance to leave the holder more than half the
// lease. Three times StopTime leaves it two thirds, less the drift.
const minLockTTL = 3 * reservation.StopTime

// parseConfig reads the configuration from args and the environment; a flag
// wins over its environment variable, and both are parsed by the same flag
// code, so a bad value reads the same wherever it came from. Usage goes to
// stderr. It returns flag.ErrHelp for -h, or a *configError.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	var lock, guard, redlockURLs, zkServers string
	set := defineSettings(&cfg, &lock, &guard, &redlockURLs, &zkServers)
	fs := set.fs
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fmt.Fprintln(stderr, "Usage: api [flags]; every flag can also be set by its environment variable, and a flag wins.")
			fs.PrintDefaults()
			return config{}, err
		}
		return config{}, &configError{err}
	}
	if fs.NArg() > 0 {
		return config{}, &configError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := set.fillFromEnv(getenv); err != nil {
		return config{}, err
	}
	cfg.Lock, cfg.Guard = reservation.Strategy(lock), reservation.Guard(guard)
	cfg.RedlockURLs, cfg.ZooKeeperServers = splitList(redlockURLs), splitList(zkServers)
	if err := cfg.validate(); err != nil {
		return config{}, &configError{err}
	}
	return cfg, nil
}

// settings is the configuration's flag set, with the environment variable
// of each flag (env) and what a valid value looks like (hint).
type settings struct {
	fs        *flag.FlagSet
	env, hint map[string]string
}

func (s *settings) str(p *string, name, envName, def, usage string) {
	s.fs.StringVar(p, name, def, usage+" (env "+envName+")")
	s.env[name] = envName
}

func (s *settings) dur(p *time.Duration, name, envName string, def time.Duration, usage string) {
	s.fs.DurationVar(p, name, def, usage+" (env "+envName+")")
	s.env[name], s.hint[name] = envName, "want a Go duration such as 250ms or 10s"
}

// fillFromEnv sets the flags that were not given from their environment
// variables.
func (s *settings) fillFromEnv(getenv func(string) string) error {
	given := map[string]bool{}
	s.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	s.fs.VisitAll(func(f *flag.Flag) {
		if s.env[f.Name] == "" {
			return // a command, not a setting
		}
		v := getenv(s.env[f.Name])
		if err != nil || given[f.Name] || v == "" {
			return
		}
		if f.Value.Set(v) != nil {
			err = &configError{fmt.Errorf("%s=%q is not valid: %s", s.env[f.Name], v, s.hint[f.Name])}
		}
	})
	return err
}

// defineSettings defines every flag of the configuration, each with its
// environment variable.
func defineSettings(cfg *config, lock, guard, redlockURLs, zkServers *string) *settings {
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	// Errors are reported in one line by main; only -h prints the usage.
	fs.SetOutput(io.Discard)
	set := &settings{fs: fs, env: map[string]string{}, hint: map[string]string{}}
	str, dur, env, hint := set.str, set.dur, set.env, set.hint
	str(&cfg.Addr, "addr", "ADDR", ":8080", "listen address")
	str(&cfg.DatabaseURL, "database-url", "DATABASE_URL", "", "Postgres URL; empty means the in-memory store")
	str(&cfg.RedisURL, "redis-url", "REDIS_URL", "", "Redis URL (redis://host:port/db, or redis+sentinel://sentinel:port/db?master_name=NAME for a Sentinel-managed primary); empty means an embedded Redis server")
	fs.Var(&cfg.RedisAddrMap, "redis-addr-map", "Redis addresses to dial instead of others, from=to pairs of host:port, comma-separated: for servers whose Sentinels name them by addresses this instance reaches otherwise (NAT, a proxy); empty means none (env REDIS_ADDR_MAP)")
	env["redis-addr-map"], hint["redis-addr-map"] = "REDIS_ADDR_MAP", "want from=to pairs of host:port, comma-separated"
	fs.IntVar(&cfg.RedisWaitReplicas, "redis-wait-replicas", 0, "replicas of the Redis primary that must acknowledge a Redis lock (WAIT, within a tenth of LOCK_TTL) before it is granted, else 503; 0 means grant at once (env REDIS_WAIT_REPLICAS)")
	env["redis-wait-replicas"], hint["redis-wait-replicas"] = "REDIS_WAIT_REPLICAS", "want a whole number of replicas"
	str(lock, "lock", "LOCK_STRATEGY", string(reservation.LockKeyedRedis), "default lock strategy of new screenings: "+names(catalogue()))
	str(guard, "guard", "WRITE_GUARD", string(reservation.GuardFence), "default write guard of new screenings: "+names(guards()))
	dur(&cfg.LockTTL, "lock-ttl", "LOCK_TTL", 10*time.Second, "lease of a distributed lock, renewed every third of it")
	dur(&cfg.LockWait, "lock-wait", "LOCK_WAIT", 5*time.Second, "longest a booking waits for its seat locks before 409 seat_busy")
	dur(&cfg.PaymentDelay, "payment-delay", "PAYMENT_DELAY", 0, "default simulated payment time inside the critical section")
	dur(&cfg.HoldTTL, "hold-ttl", "HOLD_TTL", reservation.DefaultHoldTTL, "default length of a seat hold on new screenings, 1s to 1h")
	fs.BoolVar(&cfg.Demo, "demo", false, "allow the unsafe choices lock=none and guard=off (env DEMO_MODE)")
	env["demo"], hint["demo"] = "DEMO_MODE", "want true or false"
	dur(&cfg.ReconcileEvery, "reconcile-every", "RECONCILE_EVERY", reservation.DefaultReconcileEvery, "how often this instance's payment reconciler looks for payments left open (with PAYMENT_URL); 0: no reconciler")
	str(&cfg.PaymentURL, "payment-url", "PAYMENT_URL", "", "payment provider base URL (for example http://127.0.0.1:9100, see loadgen payments); empty means a simulated payment, a wait of the payment delay")
	fs.IntVar(&cfg.DBMaxConns, "db-max-conns", defaultDBMaxConns, "most Postgres connections this instance opens, store and postgres lock strategy together (env DB_MAX_CONNS)")
	env["db-max-conns"], hint["db-max-conns"] = "DB_MAX_CONNS", "want a whole number"
	fs.BoolVar(&cfg.Healthcheck, "healthcheck", false, "do not serve: GET /healthz of the server at -addr (loopback for :port), exit 0 if it answers 200, else 1; for container healthchecks")
	fs.IntVar(&cfg.MaxScreenings, "max-screenings", reservation.DefaultMaxScreenings, "most screenings the store may hold; one more is 503 limit_reached (env MAX_SCREENINGS)")
	env["max-screenings"], hint["max-screenings"] = "MAX_SCREENINGS", "want a whole number"
	fs.Float64Var(&cfg.WriteRate, "write-rate", 0, "most writes (POST, DELETE) a second this instance accepts, all clients together; beyond it 429 rate_limited; 0 means no bound (env WRITE_RATE)")
	env["write-rate"], hint["write-rate"] = "WRITE_RATE", "want a number of writes a second, such as 200 or 0.5"
	str(&cfg.PprofAddr, "pprof-addr", "PPROF_ADDR", "", "listen address of Go's profiling endpoints (/debug/pprof/), a loopback address such as 127.0.0.1:6060; empty means none")
	str(&cfg.AdminToken, "admin-token", "ADMIN_TOKEN", "", "bearer token that POST /v1/screenings requires; empty means none")
	str(&cfg.LockDir, "lock-dir", "LOCK_DIR", filepath.Join(os.TempDir(), "seatlock-locks"), "directory of the file strategy's lock files (one host only)")
	str(redlockURLs, "redlock-urls", "REDLOCK_URLS", "", "comma-separated Redis URLs of independent servers for the redlock strategy; empty means no redlock")
	str(zkServers, "zookeeper-servers", "ZOOKEEPER_SERVERS", "", "comma-separated host:port of a ZooKeeper ensemble for the zookeeper strategy; empty means no zookeeper")

	return set
}

// validate checks the values that the flag types cannot.
// It reports the first value that is wrong.
func (c config) validate() error {
	for _, check := range []func() error{c.validateChoices, c.validateBackends, c.validateLimits} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateChoices checks the default lock strategy and write guard.
func (c config) validateChoices() error {
	// The refusals say what the README's tables say (see guards).
	s, ok := find(catalogue(), string(c.Lock))
	fence, _ := find(guards(), string(reservation.GuardFence))
	switch {
	case !ok:
		return fmt.Errorf("LOCK_STRATEGY %q is unknown; use one of %s", c.Lock, names(catalogue()))
	case !s.Safe() && !c.Demo:
		return fmt.Errorf("LOCK_STRATEGY=%s needs DEMO_MODE=true: it lets two bookings hold one seat at once; under WRITE_GUARD=%s %s",
			c.Lock, fence.Name, fence.TwoHolders)
	case !c.has(s.Needs):
		return fmt.Errorf("LOCK_STRATEGY=%s needs %s", c.Lock, s.Needs)
	}
	switch g, ok := find(guards(), string(c.Guard)); {
	case !ok:
		return fmt.Errorf("WRITE_GUARD %q is unknown; use one of %s", c.Guard, names(guards()))
	case !g.Safe && !c.Demo:
		return fmt.Errorf("WRITE_GUARD=%s needs DEMO_MODE=true: when two bookings hold one seat at once, %s", g.Name, g.TwoHolders)
	}
	return nil
}

// validateBackends checks the settings of the backends.
func (c config) validateBackends() error {
	// The URLs are parsed here so that a typo is a usage error; the
	// messages leave the URLs out, as they may hold passwords.
	if c.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			return errors.New("DATABASE_URL is not a valid Postgres URL (postgres://user:password@host:port/database)")
		}
		// Two settings of one budget would disagree sooner or later.
		if strings.Contains(c.DatabaseURL, "pool_max_conns") {
			return errors.New("DATABASE_URL sets pool_max_conns; set DB_MAX_CONNS instead, the budget of all of an instance's pools")
		}
	}
	if c.RedisWaitReplicas < 0 {
		return fmt.Errorf("REDIS_WAIT_REPLICAS %d must be 0 (off) or more", c.RedisWaitReplicas)
	}
	if len(c.RedisAddrMap) > 0 && c.RedisURL == "" {
		return errors.New("REDIS_ADDR_MAP needs REDIS_URL: the embedded Redis is dialed where it is")
	}
	if c.RedisWaitReplicas > 0 && c.RedisURL == "" {
		return errors.New("REDIS_WAIT_REPLICAS needs REDIS_URL: the embedded Redis has no replicas")
	}
	if c.RedisURL != "" {
		client, err := newRedisClient(c.RedisURL, c.RedisAddrMap, redisPool{})
		if err != nil {
			return errors.New("REDIS_URL is not a valid Redis URL (redis://host:port/db, or redis+sentinel://sentinel:port/db?master_name=NAME)")
		}
		_ = client.Close() // connects lazily: nothing was opened
	}
	for i, u := range c.RedlockURLs {
		if _, err := redis.ParseURL(u); err != nil {
			return fmt.Errorf("REDLOCK_URLS: URL %d of %d is not a valid Redis URL (redis://host:port/db): %s", i+1, len(c.RedlockURLs), redactURL(u))
		}
	}
	if c.PaymentURL != "" {
		if _, err := payment.NewClient(c.PaymentURL, payment.ClientOptions{}); err != nil {
			return errors.New("PAYMENT_URL is not an http(s) URL (http://host:port)")
		}
	}
	if len(c.RedlockURLs) > 0 && len(c.RedlockURLs) < 3 {
		n := len(c.RedlockURLs)
		return fmt.Errorf("REDLOCK_URLS names %d %s; Redlock needs at least 3 independent ones", n, plural(n, "server", "servers"))
	}
	return nil
}

// validateLimits checks the settings that are numbers, durations and
// addresses.
func (c config) validateLimits() error {
	if c.MaxScreenings < 1 {
		return fmt.Errorf("MAX_SCREENINGS %d must be at least 1", c.MaxScreenings)
	}
	if c.WriteRate < 0 || math.IsNaN(c.WriteRate) || math.IsInf(c.WriteRate, 0) {
		return fmt.Errorf("WRITE_RATE %v must be a number of writes a second, 0 for no bound", c.WriteRate)
	}
	if c.DBMaxConns < minDBMaxConns || c.DBMaxConns > maxDBMaxConns {
		return fmt.Errorf("DB_MAX_CONNS %d must be from %d to %d", c.DBMaxConns, minDBMaxConns, maxDBMaxConns)
	}
	if c.LockDir == "" {
		return errors.New("LOCK_DIR is empty")
	}
	if strings.TrimSpace(c.Addr) == "" {
		return errors.New("ADDR is empty")
	}
	if c.PprofAddr != "" && !loopbackAddr(c.PprofAddr) {
		return fmt.Errorf("PPROF_ADDR %q must be a loopback address such as 127.0.0.1:6060: profiles show the program's insides", c.PprofAddr)
	}
	if c.LockTTL < minLockTTL {
		return fmt.Errorf("LOCK_TTL %v is below %v: a lock must last well beyond the %v the service takes to stop once it has lost one", c.LockTTL, minLockTTL, reservation.StopTime)
	}
	if c.LockWait <= 0 {
		return fmt.Errorf("LOCK_WAIT %v must be positive", c.LockWait)
	}
	if c.PaymentDelay < 0 || c.PaymentDelay > reservation.MaxPaymentDelay {
		return fmt.Errorf("PAYMENT_DELAY %v must be from 0 to %v", c.PaymentDelay, reservation.MaxPaymentDelay)
	}
	if c.ReconcileEvery < 0 {
		return fmt.Errorf("RECONCILE_EVERY %v must be positive, or 0 for no reconciler", c.ReconcileEvery)
	}
	if c.HoldTTL < reservation.MinHoldTTL || c.HoldTTL > reservation.MaxHoldTTL {
		return fmt.Errorf("HOLD_TTL %v must be from %v to %v", c.HoldTTL, reservation.MinHoldTTL, reservation.MaxHoldTTL)
	}
	return nil
}

// The Postgres connection budget of one instance (DB_MAX_CONNS). Postgres
// allows 100 connections by default (max_connections), and every
// connection costs the server a process: three instances of the default
// use 48 at most, which leaves the rest for the test suites, psql and an
// operator (docs/backends.md gives what the test suites take). The
// store's share of it is what a busy instance needs (docs/backends.md
// measures it). Raise it (and the server's max_connections) for a busier
// deployment: the arithmetic is instances x DB_MAX_CONNS plus what else
// connects, below max_connections.
const (
	defaultDBMaxConns = 16
	minDBMaxConns     = 2 // one connection for each pool
	maxDBMaxConns     = 1000
)

// poolSizes splits the budget between the store's pool and the postgres
// lock strategy's. They cannot be one pool: a session advisory lock keeps
// its connection while it is held and while it is waited for, and its
// holder then needs the store to read and write the seats; in one pool,
// holders and waiters could take every connection and the holders would
// wait for one for ever (until the lock wait ran out for the waiters). So
// the lock pool gets a quarter, at least one, and holders always reach the
// store. Neither pool opens a connection before it is needed: an instance
// whose screenings use no postgres lock uses none of the lock pool's.
func poolSizes(budget int) (store, lock int32) {
	lock = int32(max(1, budget/4))
	return int32(budget) - lock, lock
}

// splitList splits a comma-separated setting, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// has reports whether the settings a strategy needs (see catalogue) are
// given: "" is none, always there; several are joined by " and ".
func (c config) has(needs string) bool {
	for env := range strings.SplitSeq(needs, " and ") {
		if !c.gives(env) {
			return false
		}
	}
	return true
}

// gives reports whether the setting of one environment variable is given.
func (c config) gives(env string) bool {
	switch env {
	case "":
		return true
	case "DATABASE_URL":
		return c.DatabaseURL != ""
	case "REDLOCK_URLS":
		return len(c.RedlockURLs) > 0
	case "ZOOKEEPER_SERVERS":
		return len(c.ZooKeeperServers) > 0
	case "DEMO_MODE":
		return c.Demo
	}
	return false
}
