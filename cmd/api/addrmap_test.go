package main

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestRedisAddrMapIsDialed: with REDIS_ADDR_MAP, the client reaches Redis
// at the address the map gives for the one it was named by, and any other
// address as it is. (The cluster's Redis links test a Sentinel's.)
func TestRedisAddrMapIsDialed(t *testing.T) {
	u, err := url.Parse(testenv.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	live, dead := u.Host, deadAddr(t)
	ping := func(target string, addrs addrMap) error {
		c, err := newRedisClient("redis://"+target+"/0", addrs, redisPool{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	if err := ping(dead, nil); err == nil {
		t.Fatalf("PING to %s, where nothing listens, answered: this test no longer sees the map", dead)
	}
	var m addrMap
	if err := m.Set(dead + "=" + live); err != nil {
		t.Fatal(err)
	}
	if err := ping(dead, m); err != nil {
		t.Errorf("%s mapped to %s: %v", dead, live, err)
	}
	if err := ping(live, m); err != nil {
		t.Errorf("%s, not in the map: %v", live, err)
	}
	if got, want := m.String(), dead+"="+live; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
