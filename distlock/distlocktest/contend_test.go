package distlocktest

import (
	"context"
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock"
)

// noExclusion is a Locker that hands every key to everybody at once: the
// broken lock the suite must catch.
type noExclusion struct{}

func (noExclusion) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	return noLock{}, nil
}

type noLock struct{}

func (noLock) Token(string) int64                { return 1 }
func (noLock) Lost() <-chan struct{}             { return nil }
func (noLock) Err() error                        { return nil }
func (noLock) Refresh(ctx context.Context) error { return nil }
func (noLock) Release(ctx context.Context) error { return nil }

// TestContendCatchesBrokenExclusion proves that the mutual exclusion test
// can fail: on a lock that excludes nobody it sees overlapping sections,
// lost counter updates and repeated fencing tokens.
func TestContendCatchesBrokenExclusion(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ls := []distlock.Locker{noExclusion{}, noExclusion{}}
	r := contend(ctx, ls, 2, 15, "seat", true)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.overlaps == 0 || r.counter == r.sections || r.staleTokens == 0 {
		t.Fatalf("contend missed a lock that excludes nobody: %+v", r)
	}
}
