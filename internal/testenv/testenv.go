// Package testenv finds the real Redis and Postgres servers that
// integration tests run against.
//
// A test asks for a server with RedisURL or NewDatabase. The server comes
// from, in order: TEST_REDIS_URL / TEST_DATABASE_URL, REDIS_URL /
// DATABASE_URL, or a container started with testcontainers-go when a Docker
// engine answers. When none is available the test is skipped with a message
// that says how to run it, unless REQUIRE_INTEGRATION=1, which turns the skip
// into a failure (CI sets it).
//
// A skip is easy to miss: go test shows a package whose tests all skipped
// as "ok". So packages with integration tests run them through Run, which
// ends with a summary, shown even by a piped go test ./... of packages
// that passed: which tests were skipped, for want of what, and the one
// command that runs them.
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
//
// Tests that need some other program (a ZooKeeper, a browser) skip through
// Unavailable or Skip, so that they are in the summary too.
//
// It also has what the tests of a running API share: LogWatcher reads its
// log for the address it listens on, EventStream reads one of its live
// event streams line by line.
package testenv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// A server is a real server that integration tests need: the one the
// first of env that is set names, else a container started for this test
// binary, so that every test of a package shares one. Containers are
// reaped by testcontainers' own reaper when the binary exits.
type server struct {
	need  Need     // for the skip: "Redis", and an assignment that names one
	env   []string // the variables that name one, first set wins
	start func() (string, error)

	mu  sync.Mutex // guards url: one container, even for parallel tests
	url string     // the started container's; empty until one started
}

var (
	redisServer = &server{
		need:  Need{What: "Redis", Env: "TEST_REDIS_URL=redis://127.0.0.1:6379/0"},
		env:   []string{"TEST_REDIS_URL", "REDIS_URL"},
		start: startRedis,
	}
	postgresServer = &server{
		need:  Need{What: "Postgres", Env: "TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable'"},
		env:   []string{"TEST_DATABASE_URL", "DATABASE_URL"},
		start: startPostgres,
	}
)

// URL returns the server's URL, or skips t (fails it under
// REQUIRE_INTEGRATION=1) when there is none. A container that failed to
// start is tried again by the next test.
func (s *server) URL(t testing.TB) string {
	t.Helper()
	if u := firstEnv(s.env...); u != "" {
		return u
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.url == "" {
		u, err := s.start()
		if err != nil {
			Unavailable(t, s.need, fmt.Sprintf("no %s for integration tests (%v); run with %s, or with a Docker engine for testcontainers",
				s.need.What, err, s.need.Env))
		}
		s.url = u
	}
	return s.url
}

// RedisURL returns the URL of a real Redis server for t. Tests that share
// the server must use keys of their own (for example with a uuid prefix):
// packages run in parallel against the same server.
func RedisURL(t testing.TB) string {
	t.Helper()
	return redisServer.URL(t)
}

// PostgresURL returns the URL of a real Postgres server for t, pointing at
// a database that other tests share. Use NewDatabase for a private one.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return postgresServer.URL(t)
}

// NewDatabase creates an empty database on the Postgres server of
// PostgresURL and returns its URL. The database is dropped when t ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	base := PostgresURL(t)
	name := "seatlock_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:16]
	if err := execOn(base, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := execOn(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testenv: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testenv: parse %s: %v", redact(base), err)
	}
	u.Path = "/" + name
	return u.String()
}

// execOn runs one statement on a connection of its own to the database
// at dbURL, within 30 seconds.
func execOn(dbURL, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", redact(dbURL), err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func startRedis() (string, error) {
	if err := dockerAnswers(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcredis.Run(ctx, "redis:7-alpine")
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx)
}

func startPostgres() (string, error) {
	if err := dockerAnswers(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, "postgres:16-alpine",
		tcpostgres.WithDatabase("seatlock"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", err
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// dockerAnswers reports whether a Docker engine can be reached, without the
// panic testcontainers raises when there is none.
func dockerAnswers() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("no Docker engine: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("no Docker engine: %w", err)
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("no Docker engine: %w", err)
	}
	return nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
