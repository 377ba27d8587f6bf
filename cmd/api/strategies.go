package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/flock"
	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/distlock/redlock"
	"github.com/seatlock/seatlock/distlock/zklock"
	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
)

// strategy is one row of reservation's strategy catalogue as this server
// offers it: the row, and how to build its locker.
type strategy struct {
	reservation.StrategyInfo
	// locker builds the strategy's seat locker on the lock backends; nil
	// for none, which locks nothing: the service runs it by itself.
	locker lockerBuilder
}

// lockerBuilder builds one strategy's seat locker on the lock backends.
type lockerBuilder func(lb *lockBackends, ctx context.Context) (reservation.SeatLocker, error)

// builders attaches a locker builder to every strategy of the catalogue
// but none.
func builders() map[reservation.Strategy]lockerBuilder {
	return map[reservation.Strategy]lockerBuilder{
		reservation.LockGlobal: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			return lb.measured(reservation.LockGlobal, locking.Global()), nil
		},
		reservation.LockKeyed: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			return lb.keyed(), nil
		},
		reservation.LockRedis: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			return lb.redis(), nil
		},
		// Built from the measured layers, not measured again: its
		// bookings' waits show in the "keyed" and the "redis" series,
		// each wait counted once, where it happened.
		reservation.LockKeyedRedis: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			return locking.Layered(lb.keyed(), lb.redis()), nil
		},
		reservation.LockPostgres: (*lockBackends).postgres,
		// Measured like the others: the measuring lease hands the
		// transaction on (reservation.SeatLease.Tx).
		reservation.LockPostgresXact: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			return lb.measured(reservation.LockPostgresXact, lb.b.pg.XactLocker()), nil
		},
		reservation.LockRedlock:   (*lockBackends).redlock,
		reservation.LockFile:      (*lockBackends).files,
		reservation.LockZooKeeper: (*lockBackends).zookeeper,
	}
}

// catalogue lists every lock strategy of reservation.Strategies with its
// builder. Config validation reads it (a strategy's name, what it needs,
// whether it is safe), openLockers builds the lockers of the strategies
// whose needs are met, which are the ones the service offers
// (reservation.Service.Strategies), and a test holds the README's strategy
// table to it.
func catalogue() []strategy {
	build := builders()
	var rows []strategy
	for _, s := range reservation.Strategies() {
		rows = append(rows, strategy{StrategyInfo: s, locker: build[s.Name]})
	}
	return append(rows, labStrategies()...)
}

// guard is one row of reservation's write guards' table.
type guard struct{ reservation.GuardInfo }

// guards lists the write guards of reservation.Guards. Config validation
// reads it, and a test holds the README's guard table to it.
func guards() []guard {
	var rows []guard
	for _, g := range reservation.Guards() {
		rows = append(rows, guard{g})
	}
	return rows
}

// key is a strategy's name, for find and names.
func (s strategy) key() string { return string(s.Name) }

// key is a guard's name, for find and names.
func (g guard) key() string { return string(g.Name) }

// find returns the row called name of a table (catalogue or guards).
func find[T interface{ key() string }](rows []T, name string) (T, bool) {
	for _, r := range rows {
		if r.key() == name {
			return r, true
		}
	}
	var none T
	return none, false
}

// names lists the names of a table's rows for messages.
func names[T interface{ key() string }](rows []T) string {
	var ns []string
	for _, r := range rows {
		ns = append(ns, r.key())
	}
	return strings.Join(ns, ", ")
}

// openLockers builds the locker of every strategy in the catalogue whose
// needs the configuration meets. A strategy whose backend is not
// configured is not offered: creating a screening with it is a 400 that
// lists what is.
func openLockers(ctx context.Context, cfg config, logger *slog.Logger, metrics *locking.Metrics, b *backends) (map[reservation.Strategy]reservation.SeatLocker, error) {
	lb := &lockBackends{cfg: cfg, logger: logger, metrics: metrics, b: b}
	lockers := make(map[reservation.Strategy]reservation.SeatLocker)
	for _, s := range catalogue() {
		if s.locker == nil || !cfg.has(s.Needs) {
			continue
		}
		l, err := s.locker(lb, ctx)
		if err != nil {
			return nil, err
		}
		lockers[s.Name] = l
	}
	return lockers, nil
}

// lockBackends builds the lockers' backends for the catalogue, each once,
// on first use: strategies that share one (keyed and keyed+redis share the
// keyed layer; redis and keyed+redis the Redis locks) share it. What it
// opens, b closes.
//
// Every locker with a lease (redis, postgres, redlock) gets
// reservation.StopTime as its StopMargin: the service goes on paying that
// long after a lock is lost, so the lock must be declared lost that long
// before its server can hand it on. ZooKeeper declares a loss a third of
// the session after a disconnection instead (zklock), and a file lock has
// no lease.
type lockBackends struct {
	cfg     config
	logger  *slog.Logger
	metrics *locking.Metrics
	b       *backends

	keyedLayer, redisLayer reservation.SeatLocker // built by keyed and redis
	pgLockPool             *pgxpool.Pool          // built by lockPool
}

// measured measures a strategy's locker whole, under the strategy's name
// as the layer.
func (lb *lockBackends) measured(name reservation.Strategy, l reservation.SeatLocker) reservation.SeatLocker {
	return locking.Instrument(string(name), l, lb.metrics)
}

// keyed returns the keyed layer, measured as "keyed": one mutex for the
// whole process. The keyed and the layered strategies must exclude each
// other's bookings of a seat only if they share it, and a screening has
// one strategy, so sharing is harmless and keeps one map of seats.
func (lb *lockBackends) keyed() reservation.SeatLocker {
	if lb.keyedLayer == nil {
		var seats keyedlock.Mutex
		lb.keyedLayer = locking.Instrument("keyed", locking.Keyed(&seats), lb.metrics)
	}
	return lb.keyedLayer
}

// redis returns the Redis layer, measured as "redis", on the client the
// backends opened.
func (lb *lockBackends) redis() reservation.SeatLocker {
	if lb.redisLayer == nil {
		locks := distlock.NewRedis(lb.b.redis, distlock.RedisOptions{
			TTL: lb.cfg.LockTTL, StopMargin: reservation.StopTime,
			Observer: lb.metrics.Renewals("redis"), WaitReplicas: lb.cfg.RedisWaitReplicas,
			WaitTimeout: lb.cfg.LockTTL / 10, WaitClient: lb.b.redisWait,
		})
		lb.b.closers = append(lb.b.closers, locks.Close)
		lb.redisLayer = locking.Instrument("redis", locking.Distributed(locks), lb.metrics)
	}
	return lb.redisLayer
}

// postgres builds the postgres strategy's session locks on the lock pool.
func (lb *lockBackends) postgres(ctx context.Context) (reservation.SeatLocker, error) {
	pool, err := lb.lockPool(ctx)
	if err != nil {
		return nil, err
	}
	return lb.measured(reservation.LockPostgres, locking.Distributed(pglock.New(pool, pglock.Options{TTL: lb.cfg.LockTTL, StopMargin: reservation.StopTime}))), nil
}

// lockPool returns the pool of the Postgres lock strategies (postgres,
// and lab-pg in demo mode), opened on first use. It is a pool of its own,
// so that held locks never starve the store of connections; see poolSizes
// for its share of the connection budget, which the strategies share.
func (lb *lockBackends) lockPool(ctx context.Context) (*pgxpool.Pool, error) {
	if lb.pgLockPool != nil {
		return lb.pgLockPool, nil
	}
	pcfg, err := pgxpool.ParseConfig(lb.cfg.DatabaseURL) // checked by config.validate
	if err != nil {
		return nil, err
	}
	// A session advisory lock occupies its connection while it is held
	// and while it is waited for, so this pool bounds how many bookings of
	// the postgres strategy one instance runs at once.
	_, pcfg.MaxConns = poolSizes(lb.cfg.DBMaxConns)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres lock pool: %w", err)
	}
	lb.b.closers = append(lb.b.closers, func() error { pool.Close(); return nil })
	lb.pgLockPool = pool
	return pool, nil
}

// redlock builds the Redlock strategy on the backends' clients of the
// REDLOCK_URLS nodes.
func (lb *lockBackends) redlock(context.Context) (reservation.SeatLocker, error) {
	clients := make([]redlock.Client, len(lb.b.redlock))
	for i, n := range lb.b.redlock {
		clients[i] = n.client
	}
	locks := redlock.New(clients, redlock.Options{TTL: lb.cfg.LockTTL, StopMargin: reservation.StopTime, Fencing: true})
	lb.b.closers = append(lb.b.closers, locks.Close)
	return lb.measured(reservation.LockRedlock, locking.Distributed(locks)), nil
}

// files builds the file strategy on lock files in LOCK_DIR.
func (lb *lockBackends) files(context.Context) (reservation.SeatLocker, error) {
	files, err := flock.New(lb.cfg.LockDir, flock.Options{})
	if err != nil {
		return nil, &configError{fmt.Errorf("LOCK_DIR: %w", err)}
	}
	lb.b.closers = append(lb.b.closers, files.Close)
	return lb.measured(reservation.LockFile, locking.Distributed(files)), nil
}

// zookeeper builds the zookeeper strategy on a session with the ensemble
// of ZOOKEEPER_SERVERS.
func (lb *lockBackends) zookeeper(ctx context.Context) (reservation.SeatLocker, error) {
	servers := strings.Join(lb.cfg.ZooKeeperServers, ",")
	dctx, cancel := context.WithTimeout(ctx, startupWait)
	defer cancel()
	zl, err := zklock.Dial(dctx, lb.cfg.ZooKeeperServers, lb.cfg.LockTTL, zklock.Options{},
		zk.WithLogInfo(false), zk.WithLogger(zkLog{lb.logger}))
	if err != nil {
		return nil, &unansweredError{backend: "zookeeper", where: servers, err: err}
	}
	lb.b.closers = append(lb.b.closers, zl.Close)
	lb.logger.Info("lock service: zookeeper", "servers", servers)
	return lb.measured(reservation.LockZooKeeper, locking.Distributed(zl)), nil
}
