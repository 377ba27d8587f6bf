package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

func TestParseConfig(t *testing.T) {
	defaults := config{
		Addr: ":8080", Lock: reservation.LockKeyedRedis, Guard: reservation.GuardFence,
		LockTTL: 10 * time.Second, LockWait: 5 * time.Second, HoldTTL: 10 * time.Minute,
		LockDir: filepath.Join(os.TempDir(), "seatlock-locks"), DBMaxConns: 16,
		MaxScreenings: reservation.DefaultMaxScreenings, ReconcileEvery: time.Second,
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want func(*config)
	}{
		{"defaults", nil, nil, func(*config) {}},
		{"environment", nil, map[string]string{
			"ADDR": "127.0.0.1:9000", "DATABASE_URL": "postgres://u@db/x", "REDIS_URL": "redis://r:6379/1",
			"LOCK_STRATEGY": "none", "WRITE_GUARD": "off", "LOCK_TTL": "2s", "LOCK_WAIT": "250ms",
			"PAYMENT_DELAY": "1.5s", "DEMO_MODE": "true", "ADMIN_TOKEN": "t", "LOCK_DIR": "/tmp/l",
			"REDLOCK_URLS": "redis://a:1/0, redis://b:1/0,redis://c:1/0", "ZOOKEEPER_SERVERS": "z1:2181,z2:2181",
			"PAYMENT_URL": "http://127.0.0.1:9100", "DB_MAX_CONNS": "30",
			"MAX_SCREENINGS": "50", "WRITE_RATE": "2.5", "HOLD_TTL": "90s", "REDIS_WAIT_REPLICAS": "1",
			"RECONCILE_EVERY": "250ms",
		}, func(c *config) {
			*c = config{Addr: "127.0.0.1:9000", DatabaseURL: "postgres://u@db/x", RedisURL: "redis://r:6379/1",
				Lock: reservation.LockNone, Guard: reservation.GuardOff, LockTTL: 2 * time.Second, LockWait: 250 * time.Millisecond,
				PaymentDelay: 1500 * time.Millisecond, Demo: true, AdminToken: "t", LockDir: "/tmp/l",
				RedlockURLs: []string{"redis://a:1/0", "redis://b:1/0", "redis://c:1/0"}, ZooKeeperServers: []string{"z1:2181", "z2:2181"},
				PaymentURL: "http://127.0.0.1:9100", DBMaxConns: 30,
				MaxScreenings: 50, WriteRate: 2.5, HoldTTL: 90 * time.Second, RedisWaitReplicas: 1,
				ReconcileEvery: 250 * time.Millisecond}
		}},
		{"sentinel-managed Redis", nil, map[string]string{
			"REDIS_URL": "redis+sentinel://s1:26379/0?master_name=seatlock&addr=s2:26379",
		}, func(c *config) { c.RedisURL = "redis+sentinel://s1:26379/0?master_name=seatlock&addr=s2:26379" }},
		{"flags win over the environment",
			[]string{"-addr", ":1", "-lock", "keyed", "-guard", "fence", "-lock-ttl", "3s", "-demo=false", "-payment-delay", "0"},
			map[string]string{"ADDR": ":2", "LOCK_STRATEGY": "global", "WRITE_GUARD": "off", "LOCK_TTL": "bogus", "DEMO_MODE": "true", "PAYMENT_DELAY": "5s"},
			func(c *config) { c.Addr, c.Lock, c.LockTTL = ":1", reservation.LockKeyed, 3*time.Second }},
		{"unsafe strategies in demo mode", []string{"-demo", "-lock", "none", "-guard", "off"}, nil,
			func(c *config) { c.Demo, c.Lock, c.Guard = true, reservation.LockNone, reservation.GuardOff }},
		{"transaction locks with a database", []string{"-lock", "postgres-xact", "-database-url", "postgres://u@db/x"}, nil,
			func(c *config) { c.Lock, c.DatabaseURL = reservation.LockPostgresXact, "postgres://u@db/x" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // in the message
	}{
		{"bad duration flag", []string{"-lock-ttl", "10"}, nil, "lock-ttl"},
		{"bad duration env", nil, map[string]string{"LOCK_WAIT": "5 seconds"}, "LOCK_WAIT"},
		{"bad bool env", nil, map[string]string{"DEMO_MODE": "maybe"}, "DEMO_MODE"},
		{"unknown strategy", []string{"-lock", "etcd"}, nil, "LOCK_STRATEGY"},
		{"zookeeper without servers", []string{"-lock", "zookeeper"}, nil, "ZOOKEEPER_SERVERS"},
		{"redlock without servers", []string{"-lock", "redlock"}, nil, "REDLOCK_URLS"},
		{"redlock with two servers", []string{"-lock", "redlock", "-redlock-urls", "redis://a:1,redis://b:1"}, nil, "at least 3"},
		{"payment URL without a scheme", nil, map[string]string{"PAYMENT_URL": "127.0.0.1:9100"}, "PAYMENT_URL"},
		{"payment URL of another scheme", []string{"-payment-url", "redis://127.0.0.1:9100"}, nil, "PAYMENT_URL"},
		{"bad redlock URL", nil, map[string]string{"REDLOCK_URLS": "redis://a:1,http://u:pw@b,redis://c:1"}, "REDLOCK_URLS: URL 2 of 3 is not a valid Redis URL (redis://host:port/db): http://u:xxxxx@b"},
		{"redlock with one server", nil, map[string]string{"REDLOCK_URLS": "redis://a:1"}, "REDLOCK_URLS names 1 server; Redlock needs at least 3"},
		{"postgres lock without a database", []string{"-lock", "postgres"}, nil, "DATABASE_URL"},
		{"postgres-xact lock without a database", nil, map[string]string{"LOCK_STRATEGY": "postgres-xact"}, "LOCK_STRATEGY=postgres-xact needs DATABASE_URL"},
		{"unknown strategy env", nil, map[string]string{"LOCK_STRATEGY": "Keyed"}, "LOCK_STRATEGY"},
		{"unknown guard", nil, map[string]string{"WRITE_GUARD": "none"}, "WRITE_GUARD"},
		{"none without demo", []string{"-lock", "none"}, nil, "DEMO_MODE"},
		{"guard off without demo", nil, map[string]string{"WRITE_GUARD": "off"}, "DEMO_MODE"},
		{"tiny lock ttl", []string{"-lock-ttl", "1ms"}, nil, "LOCK_TTL"},
		{"lock ttl too short to stop in", []string{"-lock-ttl", "400ms"}, nil, "takes to stop"},
		{"zero lock wait", []string{"-lock-wait", "0s"}, nil, "LOCK_WAIT"},
		{"negative payment delay", []string{"-payment-delay", "-1s"}, nil, "PAYMENT_DELAY"},
		{"payment delay over a minute", nil, map[string]string{"PAYMENT_DELAY": "61s"}, "PAYMENT_DELAY"},
		{"negative reconcile interval", nil, map[string]string{"RECONCILE_EVERY": "-1s"}, "RECONCILE_EVERY"},
		{"hold ttl under a second", []string{"-hold-ttl", "999ms"}, nil, "HOLD_TTL"},
		{"hold ttl over an hour", nil, map[string]string{"HOLD_TTL": "61m"}, "HOLD_TTL"},
		{"bad database URL", nil, map[string]string{"DATABASE_URL": "postgres://u:pw@host:notaport/db"}, "DATABASE_URL"},
		{"bad redis URL", []string{"-redis-url", "http://r:6379"}, nil, "REDIS_URL"},
		{"sentinel URL without master", nil, map[string]string{"REDIS_URL": "redis+sentinel://s:26379/0"}, "REDIS_URL"},
		{"connection budget below two", nil, map[string]string{"DB_MAX_CONNS": "1"}, "DB_MAX_CONNS"},
		{"connection budget not a number", []string{"-db-max-conns", "many"}, nil, "db-max-conns"},
		{"pool size in the URL", nil, map[string]string{"DATABASE_URL": "postgres://u:pw@db/x?pool_max_conns=50"}, "DB_MAX_CONNS"},
		{"no screenings allowed", []string{"-max-screenings", "0"}, nil, "MAX_SCREENINGS"},
		{"negative replicas to wait for", []string{"-redis-wait-replicas", "-1", "-redis-url", "redis://r:6379/0"}, nil, "REDIS_WAIT_REPLICAS"},
		{"replicas to wait for, not a number", nil, map[string]string{"REDIS_WAIT_REPLICAS": "one"}, "REDIS_WAIT_REPLICAS"},
		{"replicas of the embedded Redis", nil, map[string]string{"REDIS_WAIT_REPLICAS": "1"}, "REDIS_WAIT_REPLICAS"},
		{"screenings not a number", nil, map[string]string{"MAX_SCREENINGS": "lots"}, "MAX_SCREENINGS"},
		{"address map not pairs", nil, map[string]string{"REDIS_URL": "redis://r:6379/0", "REDIS_ADDR_MAP": "127.0.0.1:6379"}, "REDIS_ADDR_MAP"},
		{"address map without a port", []string{"-redis-url", "redis://r:6379/0", "-redis-addr-map", "r:6379=proxy"}, nil, "redis-addr-map"},
		{"address map of the embedded Redis", nil, map[string]string{"REDIS_ADDR_MAP": "r:6379=proxy:7000"}, "REDIS_ADDR_MAP"},
		{"negative write rate", nil, map[string]string{"WRITE_RATE": "-1"}, "WRITE_RATE"},
		{"write rate not a number", nil, map[string]string{"WRITE_RATE": "NaN"}, "WRITE_RATE"},
		{"infinite write rate", []string{"-write-rate", "+Inf"}, nil, "WRITE_RATE"},
		{"pprof on every interface", nil, map[string]string{"PPROF_ADDR": ":6060"}, "PPROF_ADDR"},
		{"pprof on a public address", []string{"-pprof-addr", "0.0.0.0:6060"}, nil, "PPROF_ADDR"},
		{"unknown flag", []string{"-nope"}, nil, "nope"},
		{"positional argument", []string{"serve"}, nil, "serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *configError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q: want one line naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "pw") {
				t.Errorf("message %q shows a password", err)
			}
		})
	}
}

// mainCase is a run of main in a child process: its flags and environment,
// and the exit status and the text on stderr it should end with.
type mainCase struct {
	name   string
	args   string
	env    []string
	status int
	want   string
}

// runMain runs main in a child process (see TestMain) with the flags in
// args and the environment env, and returns its exit status and output.
func runMain(t *testing.T, args string, env ...string) (status int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append([]string{"SEATLOCK_TEST_MAIN=1", "SEATLOCK_TEST_ARGS=" + args, "PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		status = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return status, out.String(), errOut.String()
}

// TestExitStatus runs main in a child process and checks its exit status
// and its one-line message.
func TestExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, tc := range []mainCase{
		{"bad duration", "-lock-ttl 10", nil, 2, "api: invalid value"},
		{"bad strategy", "", []string{"LOCK_STRATEGY=mutex"}, 2, `api: LOCK_STRATEGY "mutex" is unknown`},
		{"cannot listen", "-addr 127.0.0.1:99999", nil, 1, "api: "},
		{"help", "-h", nil, 0, "Usage: api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, stderr := runMain(t, tc.args, tc.env...)
			if status != tc.status || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit status %d, stderr %q; want %d and %q", status, stderr, tc.status, tc.want)
			}
			if tc.status == 2 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("a configuration error takes one line, got %q", stderr)
			}
		})
	}
}

// The budget is split so that the lock pool always has a connection and
// never takes the store's: holders of postgres locks must reach the store.
func TestPoolSizes(t *testing.T) {
	for _, tc := range []struct {
		budget      int
		store, lock int32
	}{
		{2, 1, 1}, {3, 2, 1}, {16, 12, 4}, {24, 18, 6}, {30, 23, 7},
	} {
		store, lock := poolSizes(tc.budget)
		if store != tc.store || lock != tc.lock {
			t.Errorf("poolSizes(%d) = %d, %d; want %d, %d", tc.budget, store, lock, tc.store, tc.lock)
		}
	}
}
