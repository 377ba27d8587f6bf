package distlock

import (
	"testing"
	"time"
)

func TestRedisNamesKeepHashTag(t *testing.T) {
	r := NewRedis(nil, RedisOptions{})
	tests := []struct {
		key, lock, fence string
	}{
		{"{screening-1}:C7", "seatlock:lock:{screening-1}:C7", "seatlock:fence:{screening-1}:C7"},
		{"C7", "seatlock:lock:{C7}", "seatlock:fence:{C7}"},
		{"{}C7", "seatlock:lock:{{}C7}", "seatlock:fence:{{}C7}"}, // an empty tag is no tag
		{"a}b{c}", "seatlock:lock:a}b{c}", "seatlock:fence:a}b{c}"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			lock, fence := r.names(tt.key)
			if lock != tt.lock || fence != tt.fence {
				t.Errorf("names = %q, %q; want %q, %q", lock, fence, tt.lock, tt.fence)
			}
		})
	}
}

func TestNewRedisDefaults(t *testing.T) {
	r := NewRedis(nil, RedisOptions{})
	want := RedisOptions{TTL: 10 * time.Second, RenewEvery: 10 * time.Second / 3, FenceTTL: 24 * time.Hour, Prefix: "seatlock:", MinBackoff: 10 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
	if r.opts != want {
		t.Fatalf("defaults = %+v, want %+v", r.opts, want)
	}
}
