package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// backends are the store and the lock services the API runs on, with what
// closes them.
type backends struct {
	store      reservation.Store
	lockers    map[reservation.Strategy]reservation.SeatLocker
	lockHealth func(context.Context) error
	redis      *redis.Client // also carries the live seat map's events

	// closers run in reverse order by close: the last opened first.
	closers []func() error
}

// openBackends opens the store (Postgres, or memory when no URL is given),
// the Redis client (to an embedded server when no URL is given) and builds
// one locker per strategy, each measured by metrics. On error it closes
// what it had opened.
func openBackends(ctx context.Context, cfg config, logger *slog.Logger, metrics *locking.Metrics) (_ *backends, err error) {
	b := &backends{}
	defer func() {
		if err != nil {
			b.close(logger)
		}
	}()

	if cfg.DatabaseURL == "" {
		logger.Info("store: in memory (set DATABASE_URL for Postgres)")
		b.store = memory.New()
	} else {
		// Open applies the migrations under an advisory lock, so
		// instances starting together do not race on them.
		storeConns, _ := poolSizes(cfg.DBMaxConns)
		pg, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: storeConns})
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		b.store = pg
		b.closers = append(b.closers, func() error { pg.Close(); return nil })
	}

	redisURL := cfg.RedisURL
	if redisURL == "" {
		emb, err := startEmbeddedRedis()
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, emb.Close)
		redisURL = "redis://" + emb.Addr()
		logger.Info("lock service: embedded Redis (set REDIS_URL for a real one)", "addr", emb.Addr())
	}
	client, err := newRedisClient(redisURL) // checked by config.validate
	if err != nil {
		return nil, errors.New("REDIS_URL is not a valid Redis URL")
	}
	b.closers = append(b.closers, client.Close)
	b.lockHealth = func(ctx context.Context) error { return client.Ping(ctx).Err() }

	redisLocks := distlock.NewRedis(client, distlock.RedisOptions{TTL: cfg.LockTTL, Observer: metrics.Renewals("redis")})
	b.closers = append(b.closers, redisLocks.Close)

	// The strategies of one lock service each are measured whole, under
	// their own name as the layer.
	b.lockers = make(map[reservation.Strategy]reservation.SeatLocker)
	if err := openOtherLockers(ctx, cfg, logger, b); err != nil {
		return nil, err
	}
	b.lockers[reservation.LockGlobal] = locking.Global()
	for strategy, l := range b.lockers {
		b.lockers[strategy] = locking.Instrument(string(strategy), l, metrics)
	}

	// The keyed and redis layers are measured on their own, and
	// keyed+redis is built from the measured layers, not measured again:
	// its bookings' waits show in the "keyed" and the "redis" series, each
	// wait counted once, where it happened. The keyed layer is one mutex
	// for the whole process: the keyed and the layered strategies must
	// exclude each other's bookings of a seat only if they share it, and a
	// screening has one strategy, so sharing is harmless and keeps one map
	// of seats.
	var seats keyedlock.Mutex
	keyed := locking.Instrument("keyed", locking.Keyed(&seats), metrics)
	distributed := locking.Instrument("redis", locking.Distributed(redisLocks), metrics)
	b.lockers[reservation.LockKeyed] = keyed
	b.lockers[reservation.LockRedis] = distributed
	b.lockers[reservation.LockKeyedRedis] = locking.Layered(keyed, distributed)
	b.redis = client
	return b, nil
}

// close closes the backends, the last opened first: the lock service before
// the Redis client it uses, the client before the embedded server, and the
// store last.
func (b *backends) close(logger *slog.Logger) {
	for i := len(b.closers) - 1; i >= 0; i-- {
		if err := b.closers[i](); err != nil {
			logger.Warn("closing backend", "err", err)
		}
	}
	b.closers = nil
}

// embeddedRedis is a miniredis server on a loopback port with a clock.
// miniredis expires keys only when told that time has passed, so a
// goroutine tells it, every clockTick, how much real time has: lock leases
// then run out as on a real Redis.
type embeddedRedis struct {
	srv  *miniredis.Miniredis
	stop chan struct{} // closed by Close to stop the clock
	done chan struct{} // closed by the clock goroutine when it ends
}

const clockTick = 50 * time.Millisecond

func startEmbeddedRedis() (*embeddedRedis, error) {
	srv := miniredis.NewMiniRedis()
	if err := srv.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("embedded redis: %w", err)
	}
	e := &embeddedRedis{srv: srv, stop: make(chan struct{}), done: make(chan struct{})}
	go e.clock()
	return e, nil
}

// clock advances the server's TTLs by the real time that passed, until
// stop is closed.
func (e *embeddedRedis) clock() {
	defer close(e.done)
	t := time.NewTicker(clockTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case now := <-t.C:
			e.srv.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Addr returns the server's host:port.
func (e *embeddedRedis) Addr() string { return e.srv.Addr() }

// Close stops the clock, waits for it, and stops the server.
func (e *embeddedRedis) Close() error {
	close(e.stop)
	<-e.done
	e.srv.Close()
	return nil
}

// sentinelScheme starts a REDIS_URL that names Redis Sentinels instead of a
// server: redis+sentinel://sentinel:26379/0?master_name=NAME, more
// Sentinels as addr=host:port parameters. The client asks the Sentinels
// for the current primary and follows a failover to the new one.
const sentinelScheme = "redis+sentinel://"

// newRedisClient returns a client for a REDIS_URL: one server for
// redis:// and rediss://, the primary that Sentinels name for
// redis+sentinel://.
func newRedisClient(rawURL string) (*redis.Client, error) {
	// One dial attempt per command: go-redis's default (five, 100 ms
	// apart, for each of three command retries) turns a Redis outage into
	// seconds of waiting per booking, where a prompt 503 is the answer.
	const dialerRetries = 1
	if rest, ok := strings.CutPrefix(rawURL, sentinelScheme); ok {
		opts, err := redis.ParseFailoverURL("redis://" + rest)
		if err != nil {
			return nil, err
		}
		if opts.MasterName == "" {
			return nil, errors.New("a redis+sentinel URL needs master_name")
		}
		opts.DialerRetries = dialerRetries
		return redis.NewFailoverClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.DialerRetries = dialerRetries
	return redis.NewClient(opts), nil
}
