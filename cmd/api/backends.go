package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/redisevents"
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
	redis      *redis.Client     // also carries the live seat map's events
	queue      reservation.Queue // the waiting rooms, in redis
	// redisWait carries the Redis locks' acquires that wait for replicas
	// (REDIS_WAIT_REPLICAS), on a pool of its own; nil without them.
	redisWait *redis.Client

	pgWhere    string // DATABASE_URL for messages (see postgresWhere)
	redisWhere string // REDIS_URL for messages (see redactURL)
	// redlock are the REDLOCK_URLS nodes, in their order.
	redlock []redlockNode

	// deployment is what the instances of one deployment share and no
	// other deployment has: their Postgres database, or, with the
	// in-memory store, this process alone. eventsNamespace is made of it.
	deployment string

	// closers run in reverse order by close: the last opened first.
	closers []func() error
}

// openBackends opens the store (Postgres, or memory when no URL is given),
// the Redis client (to an embedded server when no URL is given) and builds
// the locker of every strategy the configuration allows (see catalogue),
// each measured by metrics. On error it closes what it had opened.
//
// A backend that does not answer within startupWait is an error that names
// it and where it is, without secrets (see unansweredError): the server
// does not start without the backends it was told to use, so a typo in a
// URL or a server that is down shows at once, in one line, rather than as
// a 503 to every booking later. Redlock is the exception that proves the
// rule: it is built to work with a minority of its nodes down, so start-up
// warns of each node that does not answer and fails only without a
// majority. Once started, the server rides out outages: /readyz answers
// 503 naming what does not answer (see ready), and bookings 503.
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
		b.deployment = "memory " + uuid.NewString()
	} else if cfg.DBMaxConns, err = b.openPostgres(ctx, cfg, logger); err != nil {
		return nil, err
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
	client, err := newRedisClient(redisURL, cfg.RedisAddrMap, redisPool{}) // checked by config.validate
	if err != nil {
		return nil, errors.New("REDIS_URL is not a valid Redis URL")
	}
	b.closers = append(b.closers, client.Close)
	b.redis, b.redisWhere = client, redactURL(redisURL)
	if err := answers(ctx, "redis", b.redisWhere, func(ctx context.Context) error { return client.Ping(ctx).Err() }); err != nil {
		return nil, err
	}
	if cfg.RedisURL != "" {
		logger.Info("lock service: redis", "url", b.redisWhere)
	}
	if cfg.RedisWaitReplicas > 0 {
		b.redisWait = newRedisWaitClient(redisURL, cfg.RedisAddrMap, cfg.LockTTL/10)
		b.closers = append(b.closers, b.redisWait.Close)
	}
	if err := b.openRedlock(ctx, cfg, logger); err != nil {
		return nil, err
	}
	b.lockHealth = b.locksAnswer
	logger.Info("live seat map: events on Redis channels " + redisevents.ChannelPrefix + b.eventsNamespace() + ":<screening id>")

	if b.lockers, err = openLockers(ctx, cfg, logger, metrics, b); err != nil {
		return nil, err
	}
	return b, nil
}

// openPostgres checks that Postgres answers, and reads the database's
// identity, which names the deployment (see postgresIdentity), on a
// connection of its own that it closes before it opens the store: so
// start-up never holds more connections than DB_MAX_CONNS allows, and the
// postgres locks' pool opens none before a booking needs it (poolSizes).
// The store applies the migrations under an advisory lock, so instances
// starting together do not race on them. It returns the connection budget
// the pools share: DB_MAX_CONNS, or less when the server allows fewer (see
// connectionBudget).
func (b *backends) openPostgres(ctx context.Context, cfg config, logger *slog.Logger) (int, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DatabaseURL) // checked by config.validate
	if err != nil {
		return 0, err
	}
	b.pgWhere = postgresWhere(cfg.DatabaseURL, pcfg.ConnConfig)
	var conn *pgx.Conn
	err = answers(ctx, "postgres", b.pgWhere, func(ctx context.Context) (err error) {
		conn, err = pgx.ConnectConfig(ctx, pcfg.ConnConfig)
		return err
	})
	if err != nil {
		return 0, err
	}
	b.deployment = postgresIdentity(ctx, conn, pcfg.ConnConfig, logger)
	budget, err := connectionBudget(ctx, conn, cfg.DBMaxConns, logger)
	_ = conn.Close(ctx)
	if err != nil {
		return 0, err
	}

	storeConns, _ := poolSizes(budget)
	pg, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.Options{MaxConns: storeConns})
	if err != nil {
		// Postgres answered a moment ago: a failed migration, or a
		// server that went away since. The error names the store.
		return 0, fmt.Errorf("opening the store: %w", err)
	}
	// Group commit pays under load and costs a lone booking nothing
	// (docs/benchmarks-loadgen.md), so the store always has it.
	grouped := postgres.NewGroupCommit(pg)
	b.store, b.pg = grouped, pg
	b.closers = append(b.closers, func() error { grouped.Close(); return nil })
	logger.Info("store: postgres", "url", b.pgWhere, "max_conns", budget)
	return budget, nil
}

// connectionBudget returns how many connections this instance's pools may
// open together: maxConns (DB_MAX_CONNS), or the connection limit of the
// role or the database (CONNECTION LIMIT) when that is lower, which it
// logs. Without it the store's pool, which keeps what it opened, can hold
// every connection the role is allowed, and the postgres lock strategy,
// on a pool of its own, then finds none: 503 to every booking of it while
// Postgres itself answers. A limit below the two connections the pools
// need is an error that says so. The limit is shared by every session of
// the role, other instances' included: the log says that too. A
// superuser has no limit.
func connectionBudget(ctx context.Context, conn *pgx.Conn, maxConns int, logger *slog.Logger) (int, error) {
	var role, database string
	var roleLimit, dbLimit int
	var super bool
	err := conn.QueryRow(ctx, `select r.rolname, r.rolconnlimit, r.rolsuper, d.datname, d.datconnlimit
		from pg_roles r, pg_database d where r.rolname = current_user and d.datname = current_database()`,
	).Scan(&role, &roleLimit, &super, &database, &dbLimit)
	if err != nil {
		return 0, fmt.Errorf("reading the connection limits of the postgres role and database: %w", err)
	}
	limit, of := -1, ""
	for _, l := range []struct {
		n    int
		what string
	}{{roleLimit, "role " + role}, {dbLimit, "database " + database}} {
		if l.n >= 0 && !super && (limit < 0 || l.n < limit) {
			limit, of = l.n, l.what
		}
	}
	if limit < 0 || limit >= maxConns {
		return maxConns, nil
	}
	if limit < minDBMaxConns {
		return 0, fmt.Errorf("postgres %s has CONNECTION LIMIT %d, below the %d connections the API needs (one for the store, one for the postgres locks): raise it (ALTER ROLE ... CONNECTION LIMIT, or ALTER DATABASE)", of, limit, minDBMaxConns)
	}
	logger.Warn("postgres allows fewer connections than DB_MAX_CONNS: the pools share the lower limit; it counts the sessions of every instance and client of the role, so give each instance its share with DB_MAX_CONNS",
		"limited_by", of, "connection_limit", limit, "DB_MAX_CONNS", maxConns)
	return limit, nil
}

// postgresIdentity names the database of conn the same way whichever
// host name or address an instance reaches it by: its cluster's system
// identifier and its name. A server that does not tell its identifier
// (pg_control_system is refused) is named by DATABASE_URL's host, port and
// database instead, which every instance must then spell alike.
func postgresIdentity(ctx context.Context, conn *pgx.Conn, cc *pgx.ConnConfig, logger *slog.Logger) string {
	var id string
	err := conn.QueryRow(ctx, `select system_identifier::text || '/' || current_database() from pg_control_system()`).Scan(&id)
	if err != nil {
		id = fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
		logger.Warn("postgres does not tell its system identifier; the live seat map's channels are named after DATABASE_URL's host, port and database, which every instance must spell alike", "err", err)
	}
	return id
}

// eventsNamespace is the namespace of this deployment's channels of the
// live seat map (redisevents.Options.Namespace): Redis's channels are
// shared by every client of a server, whatever its database number, so
// two deployments on one Redis would see each other's bookings on their
// maps. It is the Redis database number and a digest of the deployment.
func (b *backends) eventsNamespace() string {
	sum := sha256.Sum256([]byte(b.deployment))
	return fmt.Sprintf("db%d-%x", b.redis.Options().DB, sum[:6])
}

// openRedlock opens a client for every REDLOCK_URLS node and checks that a
// majority of them answer, warning of each one that does not.
func (b *backends) openRedlock(ctx context.Context, cfg config, logger *slog.Logger) error {
	if len(cfg.RedlockURLs) == 0 {
		return nil
	}
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
		b.redlock = append(b.redlock, redlockNode{
			client: c, where: fmt.Sprintf("%s (node %d of %d)", redactURL(u), i+1, len(cfg.RedlockURLs)),
		})
	}
	wait, cancel := context.WithTimeout(ctx, startupWait)
	defer cancel()
	down := b.redlockDown(wait)
	for _, err := range down {
		logger.Warn("redlock node does not answer; Redlock goes on while a majority does", "node", err.where, "err", err.err)
	}
	if err := redlockQuorum(len(b.redlock), down); err != nil {
		return err
	}
	logger.Info("lock service: redlock", "nodes", len(b.redlock), "answering", len(b.redlock)-len(down))
	return nil
}

// redlockNode is a Redlock node: its client, and where it is for messages.
type redlockNode struct {
	client *redis.Client
	where  string
}

// redlockDown pings every Redlock node at once and returns those that do
// not answer before ctx ends.
func (b *backends) redlockDown(ctx context.Context) []*unansweredError {
	errs := make([]error, len(b.redlock))
	var wg sync.WaitGroup
	for i, n := range b.redlock {
		wg.Go(func() { errs[i] = n.client.Ping(ctx).Err() })
	}
	wg.Wait()
	var down []*unansweredError
	for i, err := range errs {
		if err != nil {
			down = append(down, &unansweredError{backend: "redlock node", where: b.redlock[i].where, err: err})
		}
	}
	return down
}

// redlockQuorum returns a *quorumError when the nodes down leave fewer
// than a majority of n answering, and nil otherwise.
func redlockQuorum(n int, down []*unansweredError) error {
	if n-len(down) > n/2 {
		return nil
	}
	return &quorumError{nodes: n, down: down}
}

// quorumError is Redlock with fewer than a majority of its nodes
// answering: it can grant no lock. Its message names every node down.
type quorumError struct {
	nodes int
	down  []*unansweredError
}

func (e *quorumError) Error() string {
	up := e.nodes - len(e.down)
	var b strings.Builder
	fmt.Fprintf(&b, "redlock: %d of its %d nodes %s, fewer than the majority of %d it needs",
		up, e.nodes, plural(up, "answers", "answer"), e.nodes/2+1)
	for _, d := range e.down {
		b.WriteString("; ")
		b.WriteString(d.Error())
	}
	return b.String()
}

func (e *quorumError) Unwrap() []error {
	errs := make([]error, len(e.down))
	for i, d := range e.down {
		errs[i] = d
	}
	return errs
}

// Backend names the backend that does not answer, as unansweredError's does.
func (e *quorumError) Backend() string { return "redlock" }

// plural returns one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// locksAnswer reports whether the lock services answer: Redis, and a
// majority of the Redlock nodes when there are some. It is the service's
// LockHealth; its error names what does not answer.
func (b *backends) locksAnswer(ctx context.Context) error {
	if err := b.redis.Ping(ctx).Err(); err != nil {
		return &unansweredError{backend: "redis", where: b.redisWhere, err: err}
	}
	if len(b.redlock) > 0 {
		return redlockQuorum(len(b.redlock), b.redlockDown(ctx))
	}
	return nil
}

// ready reports whether every backend answers: what GET /readyz asks. Its
// error names the backend that does not (httpapi reads the name).
func (b *backends) ready(ctx context.Context) error {
	if b.pg != nil {
		if err := b.pg.Ping(ctx); err != nil {
			return &unansweredError{backend: "postgres", where: b.pgWhere, err: err}
		}
	}
	return b.locksAnswer(ctx)
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
// redis+sentinel://. It dials the addresses addrs maps to instead of
// those they map (the Sentinels' among them).
func newRedisClient(rawURL string, addrs addrMap, pool redisPool) (*redis.Client, error) {
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
		if len(addrs) > 0 {
			opts.Dialer = addrs.dialer(opts.DialTimeout, opts.TLSConfig)
		}
		pool.apply(&opts.PoolSize, &opts.PoolTimeout, &opts.ContextTimeoutEnabled)
		return redis.NewFailoverClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.DialerRetries = dialerRetries
	// No handshake for maintenance notifications (a managed Redis's
	// upgrades, which nothing here uses): a Redis before 8 refuses it, and
	// go-redis then rewrites the options that every redis.Conn of this
	// client shares (the replica-waiting acquires take one each) without a
	// lock they share, a data race. Failover clients have it off already.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if len(addrs) > 0 {
		opts.Dialer = addrs.dialer(opts.DialTimeout, opts.TLSConfig)
	}
	pool.apply(&opts.PoolSize, &opts.PoolTimeout, &opts.ContextTimeoutEnabled)
	return redis.NewClient(opts), nil
}

// newRedisWaitClient returns a client for the Redis locks' acquires that
// wait for replicas (WAIT), each of which keeps a connection for up to
// waitTimeout: apart from the client of everything else, so that renewals,
// releases, /readyz and the seat map's events never queue behind them, and
// with a pool wait bounded by waitTimeout, so that a booking that cannot be
// replicated answers 503 within that bound however many are waiting
// (distlock bounds the pool wait and the WAIT together by it too). Its
// commands' deadlines bound their reads as well, so a primary that hangs
// costs an acquire that bound, not the client's read timeout. Its
// pool is larger than go-redis's default: one connection per booking in
// its critical section.
func newRedisWaitClient(rawURL string, addrs addrMap, waitTimeout time.Duration) *redis.Client {
	c, _ := newRedisClient(rawURL, addrs, redisPool{size: redisWaitPoolSize, timeout: waitTimeout, deadlines: true}) // the URL opened the main client
	return c
}

// redisWaitPoolSize is the pool of newRedisWaitClient: how many bookings
// of one instance may wait for replicas at once.
const redisWaitPoolSize = 64

// redisPool sizes a client's pool; zero fields keep go-redis's defaults
// (or the URL's pool_size and pool_timeout).
type redisPool struct {
	size    int           // at least this many connections
	timeout time.Duration // the longest a command waits for one
	// deadlines makes a command's context deadline cut its network
	// reads and writes short too (ContextTimeoutEnabled), not only its
	// wait for a connection.
	deadlines bool
}

// apply sets a client's pool options from p.
func (p redisPool) apply(size *int, timeout *time.Duration, deadlines *bool) {
	if p.size > 0 {
		*size = max(*size, p.size)
	}
	if p.timeout > 0 {
		*timeout = p.timeout
	}
	*deadlines = *deadlines || p.deadlines
}

// startupWait is how long start-up waits for a backend's first answer.
const startupWait = 10 * time.Second

// unansweredError is a backend that does not answer. Its message names it
// and where it is, without secrets, for the log and the exit line; Backend
// names it alone, for the clients of /readyz (httpapi), who are not told
// where the backends are.
type unansweredError struct {
	backend string // "redis", "postgres", "redlock", "redlock node", "zookeeper"
	where   string // its URL or address, without secrets (see redactURL)
	err     error
}

func (e *unansweredError) Error() string {
	return fmt.Sprintf("%s at %s does not answer: %v", e.backend, e.where, e.err)
}

func (e *unansweredError) Unwrap() error { return e.err }

// Backend names the backend that does not answer.
func (e *unansweredError) Backend() string { return e.backend }

// answers asks a backend for its first answer, for at most startupWait,
// and returns an *unansweredError naming it when none comes.
func answers(ctx context.Context, backend, where string, ping func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, startupWait)
	defer cancel()
	if err := ping(ctx); err != nil {
		return &unansweredError{backend: backend, where: where, err: err}
	}
	return nil
}

// redactURL returns a backend's URL as given, for a message, with its
// password (in the user part or as a password= parameter) replaced by
// "xxxxx"; a URL that cannot be parsed is not shown, since where its
// password is cannot be told.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(not shown: not a URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// postgresWhere is DATABASE_URL for a message: redacted (see redactURL)
// when it is a URL, and host, port and database when it is a key=value
// string, which pgx takes too.
func postgresWhere(raw string, cc *pgx.ConnConfig) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" {
		return redactURL(raw)
	}
	return fmt.Sprintf("host=%s port=%d dbname=%s", cc.Host, cc.Port, cc.Database)
}
