// Step 6: a fencing token. The acquire script takes the key and returns
// the next value of a counter (INCR): every holder of the seat gets a
// larger number than the one before. The booking is written by a second
// script, the "database", that remembers the largest token it accepted
// for the seat and refuses a smaller one. Client 1 still pauses past its
// lease and still writes when it resumes, but its write is refused.
//
// What is left: client 1 lost its booking although it did nothing wrong
// but be slow. Step 7 keeps its lease alive while it works.
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
	var stuck, refused atomic.Int32
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
			slow := client == 1 && round < slowRounds
			bench.Seat.Enter(client, slow)
			if slow {
				time.Sleep(pause)
			} else {
				time.Sleep(work)
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
	overlaps, _, stale := bench.Counts()
	fmt.Println("writes refused for a stale fencing token:", refused.Load())
	bench.Verdict(stuck.Load() == 0 && overlaps == 0 && stale == 0, "only the latest holder wrote; stale tokens were refused",
		"a paused holder wrote after its lease ran out and another client took the seat")
}
