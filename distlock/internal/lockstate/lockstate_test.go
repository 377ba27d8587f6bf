package lockstate_test

import (
	"testing"
	"time"

	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

func TestLeaseEndLeavesDriftAndStopMargin(t *testing.T) {
	sent := time.Unix(100, 0)
	l := lockstate.Lease{TTL: 2 * time.Second, Drift: 20 * time.Millisecond, StopMargin: 150 * time.Millisecond}
	if got, want := l.End(sent), sent.Add(1830*time.Millisecond); !got.Equal(want) {
		t.Errorf("End = %v after sending, want %v", got.Sub(sent), want.Sub(sent))
	}
}

func TestLeaseCheck(t *testing.T) {
	const ttl, drift = time.Second, 10 * time.Millisecond
	for _, c := range []struct {
		name       string
		margin     time.Duration
		renewEvery time.Duration
		ok         bool
	}{
		{"no margin", 0, ttl / 3, true},
		{"a margin leaving more than half", 480 * time.Millisecond, ttl / 3, true},
		{"renewals disabled", 480 * time.Millisecond, -1, true},
		{"negative margin", -time.Millisecond, ttl / 3, false},
		{"a margin leaving half", 490 * time.Millisecond, ttl / 3, false},
		{"a renewal due after the holder stops counting", 300 * time.Millisecond, 700 * time.Millisecond, false},
		{"a renewal due after the drift allowance", 0, 995 * time.Millisecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := lockstate.Lease{TTL: ttl, Drift: drift, StopMargin: c.margin}.Check(c.renewEvery)
			if (err == nil) != c.ok {
				t.Errorf("Check(%v) with StopMargin %v = %v, want ok %v", c.renewEvery, c.margin, err, c.ok)
			}
		})
	}
}

func TestBackoffStaysWithinBounds(t *testing.T) {
	for _, c := range []struct {
		name             string
		minimum, maximum time.Duration
	}{
		{"the defaults", 5 * time.Millisecond, 200 * time.Millisecond},
		{"a minute, whose doubling overflows after 28 attempts", time.Minute, time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			for attempt := range 100 {
				if d := lockstate.Backoff(attempt, c.minimum, c.maximum, -1); d < c.minimum/2 || d > c.maximum {
					t.Fatalf("Backoff(%d, %v, %v) = %v, want between %v and %v", attempt, c.minimum, c.maximum, d, c.minimum/2, c.maximum)
				}
			}
		})
	}
}
