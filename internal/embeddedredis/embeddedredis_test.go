package embeddedredis_test

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/embeddedredis"
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

	const lease = 300 * time.Millisecond
	if err := c.Set(ctx, "lock", "me", lease).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "lock").Result(); err != nil || n != 1 {
		t.Fatalf("right after SET: exists = %d, %v; want 1", n, err)
	}
	deadline := time.Now().Add(lease + time.Second)
	for {
		n, err := c.Exists(ctx, "lock").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("key with a %v lease still there after %v", lease, lease+time.Second)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
