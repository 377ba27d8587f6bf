package locking_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
)

// losingLocker hands out leases that are already lost.
type losingLocker struct{}

func (losingLocker) LockSeats(context.Context, string, []string) (reservation.SeatLease, error) {
	lost := make(chan struct{})
	close(lost)
	return lostLease{lost}, nil
}

type lostLease struct{ lost chan struct{} }

func (lostLease) Fence(string) int64                                  { return 7 }
func (lostLease) RaiseFences(context.Context, map[string]int64) error { return nil }
func (l lostLease) Lost() <-chan struct{}                             { return l.lost }
func (l lostLease) Tx() reservation.Tx                                { return nil }
func (lostLease) Release(context.Context) error                       { return nil }

func TestInstrument(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := locking.NewMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	global := locking.Instrument("global", locking.Global(), m)

	lease, err := global.LockSeats(ctx, "s1", []string{"A1"})
	if err != nil {
		t.Fatal(err)
	}
	// A second booking waits until its context ends: a failed wait.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := global.LockSeats(short, "s1", []string{"A2"}); err == nil {
		t.Fatal("second lock of the global mutex succeeded")
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	lost, err := locking.Instrument("redis", losingLocker{}, m).LockSeats(ctx, "s1", []string{"A1"})
	if err != nil {
		t.Fatal(err)
	}
	if lost.Fence("A1") != 7 {
		t.Errorf("the wrapper hides the lease's fence")
	}
	_ = lost.Release(ctx)

	counts := map[string]int{}
	families, _ := reg.Gather()
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			key := f.GetName()
			for _, l := range metric.GetLabel() {
				key += " " + l.GetValue()
			}
			counts[key] = int(metric.GetHistogram().GetSampleCount() + uint64(metric.GetCounter().GetValue()))
		}
	}
	for key, n := range map[string]int{
		"seatlock_lock_wait_seconds global acquired": 1,
		"seatlock_lock_wait_seconds global failed":   1,
		"seatlock_lock_hold_seconds global":          1,
		"seatlock_lock_hold_seconds redis":           1,
		"seatlock_lock_lost_total redis":             1,
		"seatlock_lock_lost_total global":            0,
	} {
		if counts[key] != n {
			t.Errorf("%s: %d observations, want %d (all: %v)", key, counts[key], n, counts)
		}
	}
}
