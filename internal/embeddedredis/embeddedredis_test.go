package embeddedredis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/internal/wait"
)

// TestKeysExpireInRealTime: a key with a lease is there before the lease
// runs out and gone soon after, without anyone telling the server the
// time, as a lock's lease on a real Redis.
func TestKeysExpireInRealTime(t *testing.T) {
	srv, err := embeddedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()

	// Long enough that a busy machine still asks before it runs out.
	const lease = time.Second
	if err := c.Set(ctx, "lock", "me", lease).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "lock").Result(); err != nil || n != 1 {
		t.Fatalf("right after SET: exists = %d, %v; want 1", n, err)
	}
	wait.For(t, 10*time.Second, "the key with a lease of "+lease.String()+" expires", func() bool {
		n, err := c.Exists(ctx, "lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
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
