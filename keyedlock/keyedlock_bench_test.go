package keyedlock_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moby/locker"

	"github.com/seatlock/seatlock/keyedlock"
)

// The three benchmarks compare keyedlock.Mutex with github.com/moby/locker
// (the keyed lock Docker uses) and with a plain sync.Mutex, the floor that
// any keyed lock built on a map pays on top of. The critical section is
// empty, so they measure the locks' own cost.
//
// Run: go test -run '^$' -bench . -benchmem -count 5 ./keyedlock

// BenchmarkUncontended locks and unlocks one key on one goroutine.
func BenchmarkUncontended(b *testing.B) {
	ctx := context.Background()
	b.Run("keyedlock", func(b *testing.B) {
		var m keyedlock.Mutex
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Lock(ctx, "A1"); err != nil {
				b.Fatal(err)
			}
			m.Unlock("A1")
		}
	})
	b.Run("moby-locker", func(b *testing.B) {
		l := locker.New()
		b.ReportAllocs()
		for b.Loop() {
			l.Lock("A1")
			if err := l.Unlock("A1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sync.Mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 an empty critical section is what this measures
			mu.Unlock()
		}
	})
}

// BenchmarkDistinctKeys locks and unlocks in parallel, each goroutine on a
// key of its own: no goroutine ever waits for another's key, so what is
// measured is the cost of the shared bookkeeping. For sync.Mutex each
// goroutine has its own mutex.
func BenchmarkDistinctKeys(b *testing.B) {
	ctx := context.Background()
	b.Run("keyedlock", func(b *testing.B) {
		var m keyedlock.Mutex
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := "seat-" + strconv.FormatInt(next.Add(1), 10)
			for pb.Next() {
				if err := m.Lock(ctx, key); err != nil {
					b.Error(err)
					return
				}
				m.Unlock(key)
			}
		})
	})
	b.Run("moby-locker", func(b *testing.B) {
		l := locker.New()
		var next atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key := "seat-" + strconv.FormatInt(next.Add(1), 10)
			for pb.Next() {
				l.Lock(key)
				if err := l.Unlock(key); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("sync.Mutex", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var mu sync.Mutex // one per goroutine, like one per key
			for pb.Next() {
				mu.Lock()
				//lint:ignore SA2001 an empty critical section is what this measures
				mu.Unlock()
			}
		})
	})
}

// BenchmarkHotKey locks and unlocks one key from every goroutine at once.
// The critical section is empty, so what is measured is how cheaply the
// key passes between goroutines: a lock that handed the key to a waiter on
// every Unlock would pay a goroutine switch each time.
func BenchmarkHotKey(b *testing.B) {
	ctx := context.Background()
	b.Run("keyedlock", func(b *testing.B) {
		var m keyedlock.Mutex
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := m.Lock(ctx, "A1"); err != nil {
					b.Error(err)
					return
				}
				m.Unlock("A1")
			}
		})
	})
	b.Run("moby-locker", func(b *testing.B) {
		l := locker.New()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Lock("A1")
				if err := l.Unlock("A1"); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("sync.Mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mu.Lock()
				//lint:ignore SA2001 an empty critical section is what this measures
				mu.Unlock()
			}
		})
	})
}
