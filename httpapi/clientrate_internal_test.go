package httpapi

import (
	"strconv"
	"testing"
	"time"
)

// TestClientBucketsAreBounded checks that clientBuckets keeps at most its
// size of buckets: clients beyond it share one bucket, so a flood of addresses is
// limited as one client is, and a full bucket's client is forgotten to
// make room once its bucket has refilled.
func TestClientBucketsAreBounded(t *testing.T) {
	const size, burst = 3, 1
	b := newClientBuckets(1, burst, size) // one token a second
	now := time.Now()
	for i := range size {
		if !b.of("client-"+strconv.Itoa(i), now).AllowN(now, 1) {
			t.Fatalf("client %d refused its first request", i)
		}
	}
	first, second := b.of("flood-1", now), b.of("flood-2", now)
	if first != second || first != b.shared {
		t.Fatal("clients beyond the bound got buckets of their own")
	}
	if !first.AllowN(now, 1) || second.AllowN(now, 1) {
		t.Error("the clients beyond the bound do not share one burst")
	}
	if n := b.len(); n != size {
		t.Errorf("%d buckets, want %d", n, size)
	}

	later := now.Add(2 * time.Second) // every bucket has refilled
	if b.of("newcomer", later) == b.shared {
		t.Error("a newcomer shares the bucket after the others refilled: full buckets should be forgotten")
	}
	if n := b.len(); n > size {
		t.Errorf("%d buckets, want at most %d", n, size)
	}
}
