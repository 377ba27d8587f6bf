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
// ends with one line that says how many were skipped and how to run them:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
//
// It also has what the tests of a running API share: LogWatcher reads its
// log for the address it listens on, EventStream reads one of its live
// event streams line by line.
package testenv

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
	what    string   // "Redis", for the skip message
	env     []string // the variables that name one, first set wins
	example string   // how to name one, for the skip message
	start   func() (string, error)

	mu  sync.Mutex // guards url: one container, even for parallel tests
	url string     // the started container's; empty until one started
}

var (
	redisServer = &server{
		what:    "Redis",
		env:     []string{"TEST_REDIS_URL", "REDIS_URL"},
		example: "TEST_REDIS_URL=redis://127.0.0.1:6379/0",
		start:   startRedis,
	}
	postgresServer = &server{
		what:    "Postgres",
		env:     []string{"TEST_DATABASE_URL", "DATABASE_URL"},
		example: "TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test",
		start:   startPostgres,
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
			unavailable(t, s.what, s.example, err)
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

// skipped counts the tests of this test binary that unavailable skipped,
// for Run's last line. Tests run in parallel, so it is atomic.
var skipped atomic.Int64

// unavailable skips t, or fails it when REQUIRE_INTEGRATION=1.
func unavailable(t testing.TB, what, example string, err error) {
	t.Helper()
	msg := fmt.Sprintf("no %s for integration tests (%v); run with %s, or with a Docker engine for testcontainers", what, err, example)
	if os.Getenv("REQUIRE_INTEGRATION") == "1" {
		t.Fatal(msg)
	}
	skipped.Add(1)
	t.Skip(msg)
}

// howToRun is the command that runs the integration tests against local
// servers.
const howToRun = "TEST_REDIS_URL=redis://127.0.0.1:6379/0 TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' REQUIRE_INTEGRATION=1 go test ./..."

// Run runs the tests of m and returns the exit code for os.Exit. When some
// were skipped for want of Redis or Postgres, it ends with one line that
// says how many and how to run them. go test hides the output of a package
// that passed (it prints only "ok"), so the line goes to the terminal
// (/dev/tty) when there is one, where the reader sees it after all; else to
// stderr, where -v and failures show it.
func Run(m *testing.M) int {
	code := m.Run()
	if n := skipped.Load(); n > 0 {
		out := io.Writer(os.Stderr)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			defer tty.Close()
			out = tty
		}
		pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
		fmt.Fprintf(out, "%s: %d integration tests skipped (no Redis or Postgres); run them with: %s\n", pkg, n, howToRun)
	}
	return code
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
