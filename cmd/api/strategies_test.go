package main

import (
	"bufio"
	"context"
	"errors"
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

// TestReadmeStrategyTable holds the README's table of lock strategies to
// the catalogue: the same strategies in the same order, each with the
// setting it needs and whether it is demo only.
func TestReadmeStrategyTable(t *testing.T) {
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct{ name, needs, demoOnly string }
	var docs []row
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "| `lock` | needs | demo only |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("README strategy row %q: want four cells", line)
		}
		docs = append(docs, row{strings.Trim(strings.TrimSpace(cells[1]), "`"), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])})
	}
	var want []row
	for _, s := range catalogue() {
		r := row{name: string(s.name), needs: "-", demoOnly: "no"}
		if s.needs != "" {
			r.needs = "`" + s.needs + "`"
		}
		if !s.safe {
			r.demoOnly = "yes"
		}
		want = append(want, r)
	}
	if !slices.Equal(docs, want) {
		t.Errorf("README strategy table:\n%v\nwant, from the catalogue:\n%v", docs, want)
	}
}

// TestCatalogueSafeIsTheServicesRule: a strategy the catalogue calls safe
// is one the service lets a screening choose outside demo mode, and an
// unsafe one is refused there, so the catalogue and the rule the service
// enforces cannot come apart. Every strategy is given a real locker.
func TestCatalogueSafeIsTheServicesRule(t *testing.T) {
	for _, s := range catalogue() {
		t.Run(string(s.name), func(t *testing.T) {
			svc := reservation.NewService(memory.New(), reservation.Options{
				Lockers: map[reservation.Strategy]reservation.SeatLocker{s.name: locking.Global()},
			})
			_, err := svc.CreateScreening(t.Context(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, Lock: s.name})
			switch {
			case s.safe && err != nil:
				t.Errorf("safe in the catalogue, but refused outside demo mode: %v", err)
			case !s.safe && !errors.Is(err, reservation.ErrInvalid):
				t.Errorf("unsafe in the catalogue, but outside demo mode: %v, want ErrInvalid", err)
			}
		})
	}
}

// TestCatalogueNeedsAreSettings: what a strategy needs is a setting the
// configuration knows, so that giving it offers the strategy; a strategy
// that needs nothing is offered by the defaults.
func TestCatalogueNeedsAreSettings(t *testing.T) {
	all := config{DatabaseURL: "postgres://db/x", RedlockURLs: []string{"a", "b", "c"}, ZooKeeperServers: []string{"z:2181"}}
	for _, s := range catalogue() {
		if !all.has(s.needs) {
			t.Errorf("%s needs %q, which no setting of the configuration gives", s.name, s.needs)
		}
		if (config{}).has(s.needs) != (s.needs == "") {
			t.Errorf("%s needs %q: an empty configuration has it = %v", s.name, s.needs, !(s.needs == ""))
		}
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
	if _, ok := lease.(reservation.TxLease); !ok {
		t.Errorf("the postgres-xact lease is a %T, not a reservation.TxLease", lease)
	}
}
