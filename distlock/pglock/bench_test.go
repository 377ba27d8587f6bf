package pglock_test

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/distlock/distlocktest"
	"github.com/seatlock/seatlock/distlock/pglock"
	"github.com/seatlock/seatlock/internal/testenv"
)

// The benchmarks measure pglock in the same way as distlock's Redis
// benchmarks measure the Redis locks:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test -run '^$' -bench . -benchtime 2s ./distlock/pglock

// BenchmarkAcquireRelease measures uncontended acquire+release cycles per
// second (TryObtain, then Release: two round trips): every goroutine has a
// key of its own.
func BenchmarkAcquireRelease(b *testing.B) {
	db := testenv.NewDatabase(b)
	for _, goroutines := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", goroutines), func(b *testing.B) {
			l := pglock.New(newPool(b, db, int32(goroutines)), pglock.Options{})
			distlocktest.BenchAcquireRelease(b, l, goroutines, "{"+uuid.NewString()+"}")
		})
	}
}

// BenchmarkHandoff measures the time from a holder's release to the
// acquire of a waiter blocked in pg_advisory_lock on the same key, as p50
// and p99. Holder and waiter have lockers and pools of their own, as two
// service instances would.
func BenchmarkHandoff(b *testing.B) {
	db := testenv.NewDatabase(b)
	holder := pglock.New(newPool(b, db, 2), pglock.Options{})
	waiter := pglock.New(newPool(b, db, 2), pglock.Options{})
	distlocktest.BenchHandoff(b, holder, waiter, "{"+uuid.NewString()+"}:handoff")
}
