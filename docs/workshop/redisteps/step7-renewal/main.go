// Step 7: lease renewal. While a client holds the seat, a watchdog
// goroutine it owns extends the lease every third of it, with a script
// that extends the key only while it still holds the client's token.
// Client 1 pauses as long as in step 6, but its lease never runs out: it
// keeps the seat, nobody enters beside it, and its booking is written.
// A renewal that fails (the key is gone or another's) marks the lock
// lost, and the client drops its booking instead of writing it.
//
// What is left: a booking of several seats (step 8).
package main

import (
	"crypto/rand"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seatlock/seatlock/docs/workshop/redisteps/contend"
)

const (
	clients    = 5
	rounds     = 5                     // turns each client takes after the pauses
	maxRounds  = 500                   // bound on the turns before them
	work       = 50 * time.Millisecond // the critical section: a payment
	lease      = 500 * time.Millisecond
	pause      = lease * 5 / 2 // a payment that outlasts the lease
	slowRounds = 3             // client 1's first turns are paused ones
	wait       = 10 * lease    // longest a client waits for the seat
)

// acquire sets KEYS[1] to ARGV[1] for ARGV[2] ms if it is free and
// returns the next fencing token, from the counter KEYS[2]; 0 when held.
var acquire = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("INCR", KEYS[2])
end
return 0`)

// write books the seat row KEYS[1] for ARGV[2] unless it already holds a
// booking with a larger fencing token than ARGV[1]; 1 written, 0 refused.
var write = redis.NewScript(`
local last = tonumber(redis.call("HGET", KEYS[1], "fence") or "0")
if tonumber(ARGV[1]) < last then
	return 0
end
redis.call("HSET", KEYS[1], "fence", ARGV[1], "booked_by", ARGV[2])
return 1`)

// extend sets KEYS[1]'s lease to ARGV[2] ms if it still holds ARGV[1].
var extend = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// release deletes KEYS[1] only if it holds ARGV[1], the caller's token.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

func main() {
	bench := contend.Open()
	defer bench.Close()
	key, fence, row := bench.Key("C7"), bench.Key("fence:C7"), bench.Key("seats:C7")
	var slowDone atomic.Bool
	var stuck, refused, lost atomic.Int32
	bench.Run(clients, func(client int) {
		for round, after := 0, 0; after < rounds && round < maxRounds; round++ {
			if slowDone.Load() {
				after++
			}
			token, fenceToken := rand.Text(), int64(0)
			got := bench.Retry(wait, func() (bool, error) {
				n, err := acquire.Run(bench.Ctx, bench.Redis, []string{key, fence}, token, lease.Milliseconds()).Int64()
				fenceToken = n
				return n > 0, err
			})
			if !got {
				stuck.Add(1)
				return
			}
			dog := watch(bench, key, token)
			slow := client == 1 && round < slowRounds
			bench.Seat.Enter(client, slow)
			if slow {
				time.Sleep(pause)
			} else {
				time.Sleep(work)
			}
			if dog.stop() {
				lost.Add(1) // the lease ran out: the booking is dropped
				bench.Seat.Leave(client)
				continue
			}
			ok, err := write.Run(bench.Ctx, bench.Redis, []string{row}, fenceToken, client).Bool()
			contend.Check(err)
			if ok {
				bench.Seat.Wrote(client)
			} else {
				refused.Add(1)
			}
			bench.Seat.Leave(client)
			slowDone.Store(slowDone.Load() || slow && round == slowRounds-1)
			contend.Check(release.Run(bench.Ctx, bench.Redis, []string{key}, token).Err())
		}
	})
	bench.Report(wait, stuck.Load())
	overlaps, pauses, stale := bench.Counts()
	fmt.Println("writes refused for a stale fencing token:", refused.Load())
	fmt.Println("bookings dropped for a lost lease:", lost.Load())
	bench.Verdict(stuck.Load() == 0 && overlaps+pauses == 0 && stale == 0, "the paused holder kept its lease; one holder at a time",
		"two holders at once: a lease ran out while its holder worked")
}

// watchdog renews one lock until it is stopped or a renewal fails.
type watchdog struct {
	done chan struct{} // closed to stop the goroutine
	lost chan bool     // receives, once, whether a renewal failed
}

// watch starts the watchdog of the lock on key held with token; the
// caller owns it and must call stop.
func watch(bench *contend.Bench, key, token string) *watchdog {
	w := &watchdog{done: make(chan struct{}), lost: make(chan bool, 1)}
	go func() {
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-w.done:
				w.lost <- false
				return
			case <-tick.C:
				n, err := extend.Run(bench.Ctx, bench.Redis, []string{key}, token, lease.Milliseconds()).Int()
				if err != nil || n == 0 {
					<-w.done
					w.lost <- true
					return
				}
			}
		}
	}()
	return w
}

// stop ends the watchdog, waits for it, and tells whether the lock was lost.
func (w *watchdog) stop() bool {
	close(w.done)
	return <-w.lost
}
