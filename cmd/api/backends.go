package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// backends are the store and the lock services the API runs on, with what
// closes them.
type backends struct {
	store      reservation.Store
	pg         *postgres.Store // the store, when it is Postgres
	lockers    map[reservation.Strategy]reservation.SeatLocker
	lockHealth func(context.Context) error
	redis      *redis.Client // also carries the live seat map's events

	// closers run in reverse order by close: the last opened first.
	closers []func() error
}

// openBackends opens the store (Postgres, or memory when no URL is given),
// the Redis client (to an embedded server when no URL is given) and builds
// the locker of every strategy the configuration allows (see catalogue),
// each measured by metrics. On error it closes what it had opened.
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
		b.store, b.pg = pg, pg
		b.closers = append(b.closers, func() error { pg.Close(); return nil })
	}

	redisURL := cfg.RedisURL
	if redisURL == "" {
		emb, err := embeddedredis.Start()
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
	b.redis = client

	if b.lockers, err = openLockers(ctx, cfg, logger, metrics, b); err != nil {
		return nil, err
	}
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
