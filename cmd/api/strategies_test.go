package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// readmeTable returns the rows of the README's table whose header line
// starts with header, each row's cells trimmed of spaces, without
// backquotes.
func readmeTable(t *testing.T, header string) [][]string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, header):
			in = true
		case !in || strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			in = false
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i, c := range cells {
				cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "`", "")
			}
			rows = append(rows, cells)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("README has no table with the header %q", header)
	}
	return rows
}

// TestReadmeStrategyTable holds the README's table of lock strategies to
// the catalogue: the same strategies in the same order, each with the
// setting it needs, whether it is demo only, and how far its lock
// reaches, in the catalogue's words.
func TestReadmeStrategyTable(t *testing.T) {
	var docs, want [][]string
	for _, row := range readmeTable(t, "| `lock` | needs | demo only | one holder of a seat at a time |") {
		docs = append(docs, row[:4])
	}
	for _, s := range catalogue() {
		needs, demoOnly := "-", "no"
		if s.Needs != "" {
			needs = s.Needs
		}
		if !s.Safe() {
			demoOnly = "yes"
		}
		want = append(want, []string{string(s.Name), needs, demoOnly, string(s.Reach)})
	}
	if !slices.EqualFunc(docs, want, slices.Equal) {
		t.Errorf("README strategy table:\n%q\nwant, from the catalogue:\n%q", docs, want)
	}
}

// TestReadmeGuardTable holds the README's table of write guards to the
// guards the server offers: the same guards, whether each is demo only,
// and what it does when two bookings hold one seat, in the same words as
// the server's refusals.
func TestReadmeGuardTable(t *testing.T) {
	var want [][]string
	for _, g := range guards() {
		demoOnly := "no"
		if !g.Safe {
			demoOnly = "yes"
		}
		want = append(want, []string{string(g.Name), demoOnly, g.TwoHolders})
	}
	if docs := readmeTable(t, "| `guard` | demo only | when two bookings hold one seat at once |"); !slices.EqualFunc(docs, want, slices.Equal) {
		t.Errorf("README guard table:\n%q\nwant, from guards():\n%q", docs, want)
	}
}

// TestRefusalsSayWhatTheTablesSay: the refusal of an unsafe setting says
// what the README's tables say it does, and never that the fenced write
// double-books.
func TestRefusalsSayWhatTheTablesSay(t *testing.T) {
	fence, _ := find(guards(), string(reservation.GuardFence))
	off, _ := find(guards(), string(reservation.GuardOff))
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LOCK_STRATEGY": "none"}, "LOCK_STRATEGY=none needs DEMO_MODE=true: it lets two bookings hold one seat at once; under WRITE_GUARD=fence " + fence.TwoHolders},
		{map[string]string{"WRITE_GUARD": "off"}, "WRITE_GUARD=off needs DEMO_MODE=true: when two bookings hold one seat at once, " + off.TwoHolders},
	} {
		_, err := parseConfig(nil, func(k string) string { return tc.env[k] }, io.Discard)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
	if strings.Contains(fence.TwoHolders, "double-booked") || !strings.Contains(off.TwoHolders, "double-booked") {
		t.Errorf("fence: %q, off: %q: only off double-books", fence.TwoHolders, off.TwoHolders)
	}
}

// TestCatalogueSafeIsTheServicesRule: a strategy the catalogue calls safe
// is one the service lets a screening choose outside demo mode, and an
// unsafe one is refused there, so the catalogue and the rule the service
// enforces cannot come apart. Every strategy is given a real locker.
func TestCatalogueSafeIsTheServicesRule(t *testing.T) {
	for _, s := range catalogue() {
		t.Run(string(s.Name), func(t *testing.T) {
			svc := reservation.NewService(memory.New(), reservation.Options{
				Lockers: map[reservation.Strategy]reservation.SeatLocker{s.Name: locking.Global()},
			})
			_, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, Lock: s.Name})
			switch {
			case s.Safe() && err != nil:
				t.Errorf("safe in the catalogue, but refused outside demo mode: %v", err)
			case !s.Safe() && !errors.Is(err, reservation.ErrInvalid):
				t.Errorf("unsafe in the catalogue, but outside demo mode: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestCatalogueNeedsAreSettings: what a strategy needs is a setting the
// configuration knows, so that giving it offers the strategy; a strategy
// that needs nothing is offered by the defaults.
func TestCatalogueNeedsAreSettings(t *testing.T) {
	all := config{DatabaseURL: "postgres://db/x", RedlockURLs: []string{"a", "b", "c"}, ZooKeeperServers: []string{"z:2181"}, Demo: true}
	for _, s := range catalogue() {
		if !all.has(s.Needs) {
			t.Errorf("%s needs %q, which no setting of the configuration gives", s.Name, s.Needs)
		}
		if (config{}).has(s.Needs) != (s.Needs == "") {
			t.Errorf("%s needs %q: an empty configuration has it = %v", s.Name, s.Needs, !(s.Needs == ""))
		}
	}
}

// TestStrategyNeedingTwoSettings: lab-pg, the attendee's Postgres lock,
// is offered only when both settings it needs are given, and a default
// strategy that lacks one is refused with both named.
func TestStrategyNeedingTwoSettings(t *testing.T) {
	s, ok := find(catalogue(), string(labPg))
	if !ok {
		t.Fatalf("no %s in the catalogue", labPg)
	}
	for _, tc := range []struct {
		cfg  config
		want bool
	}{
		{config{Demo: true}, false},
		{config{DatabaseURL: "postgres://db/x"}, false},
		{config{Demo: true, DatabaseURL: "postgres://db/x"}, true},
	} {
		if got := tc.cfg.has(s.Needs); got != tc.want {
			t.Errorf("demo %v, database %q: has(%q) = %v, want %v", tc.cfg.Demo, tc.cfg.DatabaseURL, s.Needs, got, tc.want)
		}
	}
	env := map[string]string{"LOCK_STRATEGY": string(labPg), "DEMO_MODE": "true"}
	_, err := parseConfig(nil, func(k string) string { return env[k] }, io.Discard)
	if want := "LOCK_STRATEGY=lab-pg needs DEMO_MODE and DATABASE_URL"; err == nil || err.Error() != want {
		t.Errorf("LOCK_STRATEGY=lab-pg without DATABASE_URL: %v, want %q", err, want)
	}
}

// TestPostgresXactLeaseIsItsTransaction: the postgres-xact locker that the
// wiring builds hands out the transaction itself as its lease, so that the
// booking reads and writes through it. A wrapper around it (measuring,
// say) would hide the transaction, and the booking would quietly read and
// write through the store on a second connection.
func TestPostgresXactLeaseIsItsTransaction(t *testing.T) {
	cfg := config{DatabaseURL: testenv.NewDatabase(t), RedisURL: testenv.RedisURL(t), LockTTL: time.Second, LockDir: t.TempDir()}
	logger := slog.New(slog.DiscardHandler)
	metrics, err := locking.NewMetrics(prometheus.NewRegistry(), logger)
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBackends(t.Context(), cfg, logger, metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close(logger)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	lease, err := b.lockers[reservation.LockPostgresXact].LockSeats(ctx, "s", []string{"A1"})
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(t.Context())
	if lease.Tx() == nil {
		t.Errorf("the postgres-xact lease (%T) hands the booking no transaction", lease)
	}
}
