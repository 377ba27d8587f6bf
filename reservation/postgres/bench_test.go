package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// benchScreening opens a store on a fresh database with one fenced
// screening, whose seats the benchmarks name themselves (the store checks
// only that the screening exists).
func benchScreening(b *testing.B) (*postgres.GroupCommit, reservation.Screening) {
	store := openGrouped(b, testenv.NewDatabase(b))
	sc := reservation.Screening{ID: "bench", Movie: "M", StartsAt: time.Now(), Rows: 1, SeatsPerRow: 1,
		Lock: reservation.LockRedis, Guard: reservation.GuardFence}
	if err := store.CreateScreening(b.Context(), sc); err != nil {
		b.Fatal(err)
	}
	return store, sc
}

// BenchmarkBook measures fenced bookings of free seats, one and four seats
// at a time, from parallel goroutines: the store's common path (begin, one
// batch, commit).
func BenchmarkBook(b *testing.B) {
	store, sc := benchScreening(b)
	var next atomic.Int64 // numbers seats; b.Run may call its function more than once
	for _, seats := range []int{1, 4} {
		b.Run(fmt.Sprintf("seats=%d", seats), func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					// The store does not check seats against the layout,
					// so every booking can take seats nobody had.
					ids := make([]string, seats)
					fences := make(map[string]int64, seats)
					for i := range ids {
						n := next.Add(1)
						ids[i] = fmt.Sprintf("S%d", n)
						fences[ids[i]] = n
					}
					err := store.Book(b.Context(), reservation.Write{
						Booking: reservation.Booking{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: ids,
							Customer: "bench", CreatedAt: time.Now()},
						TokenHash: []byte("hash"),
						Guard:     reservation.GuardFence,
						Fences:    fences,
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkWriteBatch measures batches of group commit, one after
// another on one connection, of 1 to 24 bookings of one free seat each
// (6 and 14 stand for batches of three instances sharing 64 clients and
// of one instance alone under them): what a batch costs on top of its
// bookings, as time per booking, and the client's side of it with
// -benchmem. The time includes the server's and the commit's, so the
// fixed cost of a batch shows as the difference between the sizes
// (docs/benchmarks-loadgen.md).
func BenchmarkWriteBatch(b *testing.B) {
	store, sc := benchScreening(b)
	n := 0 // seats written so far: every booking takes a new one
	for _, batch := range []int{1, 6, 14, 24} {
		b.Run(fmt.Sprintf("bookings=%d", batch), func(b *testing.B) {
			ws := make([]reservation.Write, batch)
			for b.Loop() {
				for i := range ws {
					n++
					seat := fmt.Sprintf("S%d", n)
					ws[i] = reservation.Write{
						Booking: reservation.Booking{ID: uuid.NewString(), ScreeningID: sc.ID, Seats: []string{seat},
							Customer: "bench", CreatedAt: time.Now()},
						TokenHash: []byte("hash"),
						Guard:     reservation.GuardFence,
						Fences:    map[string]int64{seat: int64(n)},
					}
				}
				for _, err := range postgres.WriteBatch(b.Context(), store, ws) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*batch), "µs/booking")
		})
	}
}
