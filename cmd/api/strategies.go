package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock/flock"
	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/distlock/redlock"
	"github.com/seatlock/seatlock/distlock/zklock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
)

// openOtherLockers adds the lock strategies beyond Redis that the
// configuration makes possible: postgres (with DATABASE_URL), file (always,
// in LOCK_DIR), redlock (with REDLOCK_URLS) and zookeeper (with
// ZOOKEEPER_SERVERS). A strategy whose backend is not configured is not
// offered: creating a screening with it is a 400 that lists what is.
// postgres-xact needs no locker: the service offers it whenever the store
// can book in a transaction (reservation.TxBooker), that is with
// DATABASE_URL.
func openOtherLockers(ctx context.Context, cfg config, logger *slog.Logger, b *backends) error {
	files, err := flock.New(cfg.LockDir, flock.Options{})
	if err != nil {
		return &configError{fmt.Errorf("LOCK_DIR: %w", err)}
	}
	b.lockers[reservation.LockFile] = locking.Distributed(files)

	if cfg.DatabaseURL != "" {
		pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL) // checked by config.validate
		if err != nil {
			return err
		}
		// A session advisory lock occupies its connection while it is
		// held and while it is waited for, so this pool bounds how many
		// bookings of the strategy one instance runs at once; see
		// poolSizes for why it is a pool of its own.
		_, pcfg.MaxConns = poolSizes(cfg.DBMaxConns)
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			return fmt.Errorf("postgres lock pool: %w", err)
		}
		b.closers = append(b.closers, func() error { pool.Close(); return nil })
		b.lockers[reservation.LockPostgres] = locking.Distributed(pglock.New(pool, pglock.Options{TTL: cfg.LockTTL}))
	}

	if len(cfg.RedlockURLs) > 0 {
		clients := make([]redlock.Client, len(cfg.RedlockURLs))
		for i, u := range cfg.RedlockURLs {
			opts, err := redis.ParseURL(u) // checked by config.validate
			if err != nil {
				return err
			}
			// Every call to a node must end at its deadline, so that a
			// hung node costs an attempt NodeTimeout, not the lease.
			opts.ContextTimeoutEnabled, opts.MaxRetries, opts.DialerRetries = true, -1, 1
			c := redis.NewClient(opts)
			b.closers = append(b.closers, c.Close)
			clients[i] = c
		}
		b.lockers[reservation.LockRedlock] = locking.Distributed(redlock.New(clients, redlock.Options{TTL: cfg.LockTTL, Fencing: true}))
		logger.Info("lock service: redlock", "nodes", len(clients))
	}

	if len(cfg.ZooKeeperServers) > 0 {
		dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		zl, err := zklock.Dial(dctx, cfg.ZooKeeperServers, cfg.LockTTL, zklock.Options{}, zk.WithLogInfo(false))
		if err != nil {
			return fmt.Errorf("zookeeper: %w", err)
		}
		b.closers = append(b.closers, zl.Close)
		b.lockers[reservation.LockZooKeeper] = locking.Distributed(zl)
		logger.Info("lock service: zookeeper", "servers", strings.Join(cfg.ZooKeeperServers, ","))
	}
	return nil
}
