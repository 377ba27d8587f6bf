package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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

	// The lock backends beyond Redis (see openOtherLockers).
	LockDir          string   // file locks; default under the temp directory
	RedlockURLs      []string // empty: no redlock strategy
	ZooKeeperServers []string // empty: no zookeeper strategy
}

// configError is a bad flag or environment variable. main exits with
// status 2 for it, as for any usage error.
type configError struct {
	err error
}

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// minLockTTL keeps the lease long enough for its watchdog (TTL/3) to make
// sense.
const minLockTTL = 10 * time.Millisecond

// parseConfig reads the configuration from args and the environment; a flag
// wins over its environment variable, and both are parsed by the same flag
// code, so a bad value reads the same wherever it came from. Usage goes to
// stderr. It returns flag.ErrHelp for -h, or a *configError.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var cfg config
	var lock, guard, redlockURLs, zkServers string
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	// Errors are reported in one line by main; only -h prints the usage.
	fs.SetOutput(io.Discard)
	// env pairs each flag with its environment variable, hint says what a
	// valid value looks like.
	env, hint := map[string]string{}, map[string]string{}
	str := func(p *string, name, envName, def, usage string) {
		fs.StringVar(p, name, def, usage+" (env "+envName+")")
		env[name] = envName
	}
	dur := func(p *time.Duration, name, envName string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage+" (env "+envName+")")
		env[name], hint[name] = envName, "want a Go duration such as 250ms or 10s"
	}
	str(&cfg.Addr, "addr", "ADDR", ":8080", "listen address")
	str(&cfg.DatabaseURL, "database-url", "DATABASE_URL", "", "Postgres URL; empty means the in-memory store")
	str(&cfg.RedisURL, "redis-url", "REDIS_URL", "", "Redis URL (redis://host:port/db, or redis+sentinel://sentinel:port/db?master_name=NAME for a Sentinel-managed primary); empty means an embedded Redis server")
	str(&lock, "lock", "LOCK_STRATEGY", string(reservation.LockKeyedRedis), "default lock strategy of new screenings: "+strategyNames())
	str(&guard, "guard", "WRITE_GUARD", string(reservation.GuardFence), "default write guard of new screenings: fence, off")
	dur(&cfg.LockTTL, "lock-ttl", "LOCK_TTL", 10*time.Second, "lease of a distributed lock, renewed every third of it")
	dur(&cfg.LockWait, "lock-wait", "LOCK_WAIT", 5*time.Second, "longest a booking waits for its seat locks before 409 seat_busy")
	dur(&cfg.PaymentDelay, "payment-delay", "PAYMENT_DELAY", 0, "default simulated payment time inside the critical section")
	dur(&cfg.HoldTTL, "hold-ttl", "HOLD_TTL", reservation.DefaultHoldTTL, "default length of a seat hold on new screenings, 1s to 1h")
	fs.BoolVar(&cfg.Demo, "demo", false, "allow the unsafe choices lock=none and guard=off (env DEMO_MODE)")
	env["demo"], hint["demo"] = "DEMO_MODE", "want true or false"
	str(&cfg.PaymentURL, "payment-url", "PAYMENT_URL", "", "payment provider base URL (for example http://127.0.0.1:9100, see loadgen payments); empty means a simulated payment, a wait of the payment delay")
	str(&cfg.AdminToken, "admin-token", "ADMIN_TOKEN", "", "bearer token that POST /v1/screenings requires; empty means none")
	str(&cfg.LockDir, "lock-dir", "LOCK_DIR", filepath.Join(os.TempDir(), "seatlock-locks"), "directory of the file strategy's lock files (one host only)")
	str(&redlockURLs, "redlock-urls", "REDLOCK_URLS", "", "comma-separated Redis URLs of independent servers for the redlock strategy; empty means no redlock")
	str(&zkServers, "zookeeper-servers", "ZOOKEEPER_SERVERS", "", "comma-separated host:port of a ZooKeeper ensemble for the zookeeper strategy; empty means no zookeeper")

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
	// Environment variables fill in the flags that were not given.
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(env[f.Name])
		if err != nil || given[f.Name] || v == "" {
			return
		}
		if f.Value.Set(v) != nil {
			err = &configError{fmt.Errorf("%s=%q is not valid: %s", env[f.Name], v, hint[f.Name])}
		}
	})
	if err != nil {
		return config{}, err
	}
	cfg.Lock, cfg.Guard = reservation.Strategy(lock), reservation.Guard(guard)
	cfg.RedlockURLs, cfg.ZooKeeperServers = splitList(redlockURLs), splitList(zkServers)
	if err := cfg.validate(); err != nil {
		return config{}, &configError{err}
	}
	return cfg, nil
}

// validate checks the values that the flag types cannot.
func (c config) validate() error {
	switch c.Lock {
	case reservation.LockGlobal, reservation.LockKeyed, reservation.LockRedis, reservation.LockKeyedRedis, reservation.LockFile:
	case reservation.LockNone:
		if !c.Demo {
			return errors.New("LOCK_STRATEGY=none can double-book and needs DEMO_MODE=true")
		}
	case reservation.LockPostgres, reservation.LockPostgresXact:
		if c.DatabaseURL == "" {
			return fmt.Errorf("LOCK_STRATEGY=%s needs DATABASE_URL", c.Lock)
		}
	case reservation.LockRedlock:
		if len(c.RedlockURLs) == 0 {
			return errors.New("LOCK_STRATEGY=redlock needs REDLOCK_URLS")
		}
	case reservation.LockZooKeeper:
		if len(c.ZooKeeperServers) == 0 {
			return errors.New("LOCK_STRATEGY=zookeeper needs ZOOKEEPER_SERVERS")
		}
	default:
		return fmt.Errorf("LOCK_STRATEGY %q is unknown; use one of %s", c.Lock, strategyNames())
	}
	switch c.Guard {
	case reservation.GuardFence:
	case reservation.GuardOff:
		if !c.Demo {
			return errors.New("WRITE_GUARD=off can double-book and needs DEMO_MODE=true")
		}
	default:
		return fmt.Errorf("WRITE_GUARD %q is unknown; use fence or off", c.Guard)
	}
	// The URLs are parsed here so that a typo is a usage error; the
	// messages leave the URLs out, as they may hold passwords.
	if c.DatabaseURL != "" {
		if _, err := pgxpool.ParseConfig(c.DatabaseURL); err != nil {
			return errors.New("DATABASE_URL is not a valid Postgres URL (postgres://user:password@host:port/database)")
		}
	}
	if c.RedisURL != "" {
		client, err := newRedisClient(c.RedisURL)
		if err != nil {
			return errors.New("REDIS_URL is not a valid Redis URL (redis://host:port/db, or redis+sentinel://sentinel:port/db?master_name=NAME)")
		}
		_ = client.Close() // connects lazily: nothing was opened
	}
	for _, u := range c.RedlockURLs {
		if _, err := redis.ParseURL(u); err != nil {
			return errors.New("REDLOCK_URLS holds a URL that is not a valid Redis URL (redis://host:port/db)")
		}
	}
	if c.PaymentURL != "" {
		if _, err := payment.NewClient(c.PaymentURL, payment.ClientOptions{}); err != nil {
			return errors.New("PAYMENT_URL is not an http(s) URL (http://host:port)")
		}
	}
	if len(c.RedlockURLs) > 0 && len(c.RedlockURLs) < 3 {
		return fmt.Errorf("REDLOCK_URLS names %d servers; Redlock needs at least 3 independent ones", len(c.RedlockURLs))
	}
	if c.LockDir == "" {
		return errors.New("LOCK_DIR is empty")
	}
	if strings.TrimSpace(c.Addr) == "" {
		return errors.New("ADDR is empty")
	}
	if c.LockTTL < minLockTTL {
		return fmt.Errorf("LOCK_TTL %v is below %v", c.LockTTL, minLockTTL)
	}
	if c.LockWait <= 0 {
		return fmt.Errorf("LOCK_WAIT %v must be positive", c.LockWait)
	}
	if c.PaymentDelay < 0 || c.PaymentDelay > reservation.MaxPaymentDelay {
		return fmt.Errorf("PAYMENT_DELAY %v must be from 0 to %v", c.PaymentDelay, reservation.MaxPaymentDelay)
	}
	if c.HoldTTL < reservation.MinHoldTTL || c.HoldTTL > reservation.MaxHoldTTL {
		return fmt.Errorf("HOLD_TTL %v must be from %v to %v", c.HoldTTL, reservation.MinHoldTTL, reservation.MaxHoldTTL)
	}
	return nil
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

// strategyNames lists every lock strategy for messages.
func strategyNames() string {
	var names []string
	for _, s := range reservation.AllStrategies() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}
