package embeddedredis_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/embeddedredis"
)

// TestKeysExpireInRealTime: a key with a lease is there before the lease
// runs out and gone soon after, without anyone telling the server the
// time, as a lock's lease on a real Redis.
func TestKeysExpireInRealTime(t *testing.T) {
	c := startClient(t, embeddedredis.Options{})
	const lease = 300 * time.Millisecond
	expiry(t, c, lease, lease+time.Second)
}

// TestCloseStopsTheServer: after Close the port answers nothing.
func TestCloseStopsTheServer(t *testing.T) {
	srv, err := embeddedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("ping before Close: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Ping(t.Context()).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("ping after Close: %v, want a connection error", err)
	}
}

// TestFastClock: at rate 4 a key with a 2 s TTL is gone well before 2 s of
// real time, and there for the first part of its 0.5 s.
func TestFastClock(t *testing.T) {
	c := startClient(t, embeddedredis.Options{Rate: 4})
	// 2 s at rate 4 is 0.5 s; the bounds are loose for a shared machine,
	// but 1.5 s is far below the TTL a real clock would keep it for.
	if took := expiry(t, c, 2*time.Second, 1500*time.Millisecond); took < 300*time.Millisecond {
		t.Errorf("a 2s key at rate 4 expired after %v of real time, want about 500ms", took)
	}
}

func TestStartWithBadRate(t *testing.T) {
	for _, rate := range []float64{-1, math.NaN(), math.Inf(1)} {
		if srv, err := embeddedredis.StartWith(embeddedredis.Options{Rate: rate}); err == nil {
			srv.Close()
			t.Errorf("StartWith rate %v: no error", rate)
		}
	}
}

// startClient starts a server with opts and returns a client of it; both
// are closed when t ends.
func startClient(t *testing.T, opts embeddedredis.Options) *redis.Client {
	t.Helper()
	srv, err := embeddedredis.StartWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// expiry sets a key with ttl, checks it is there, and returns how long it
// lasted in real time; it fails t if the key is still there after limit.
func expiry(t *testing.T, c *redis.Client, ttl, limit time.Duration) time.Duration {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	if err := c.Set(ctx, "lock", "me", ttl).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "lock").Result(); err != nil || n != 1 {
		t.Fatalf("right after SET: exists = %d, %v; want 1", n, err)
	}
	for {
		n, err := c.Exists(ctx, "lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("key with a %v TTL still there after %v", ttl, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
