package distlock

import (
	"testing"
	"time"
)

func TestRedisNamesKeepHashTag(t *testing.T) {
	r := NewRedis(nil, RedisOptions{})
	tests := []struct {
		key, lock, fence, channel string
	}{
		{"{screening-1}:C7", "seatlock:lock:{screening-1}:C7", "seatlock:fence:{screening-1}:C7", "seatlock:released:{screening-1}:C7"},
		{"C7", "seatlock:lock:{C7}", "seatlock:fence:{C7}", "seatlock:released:{C7}"},
		{"{}C7", "seatlock:lock:{{}C7}", "seatlock:fence:{{}C7}", "seatlock:released:{{}C7}"}, // an empty tag is no tag
		{"a}b{c}", "seatlock:lock:a}b{c}", "seatlock:fence:a}b{c}", "seatlock:released:a}b{c}"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			if got := r.lockKey(tt.key); got != tt.lock {
				t.Errorf("lockKey = %q, want %q", got, tt.lock)
			}
			if got := r.fenceKey(tt.key); got != tt.fence {
				t.Errorf("fenceKey = %q, want %q", got, tt.fence)
			}
			if got := r.channel(tt.key); got != tt.channel {
				t.Errorf("channel = %q, want %q", got, tt.channel)
			}
		})
	}
}

func TestNewRedisDefaults(t *testing.T) {
	r := NewRedis(nil, RedisOptions{})
	want := RedisOptions{TTL: 10 * time.Second, RenewEvery: 10 * time.Second / 3, Prefix: "seatlock:", MinBackoff: 10 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
	if r.opts != want {
		t.Fatalf("defaults = %+v, want %+v", r.opts, want)
	}
}
