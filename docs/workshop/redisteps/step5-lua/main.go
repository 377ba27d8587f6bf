// Step 5: release in one Lua script. Redis runs a script without
// interleaving anybody else's commands, so "delete the key if it still
// holds my token" is one step, and a late release deletes nothing. What
// is left is time: client 1 pauses past its lease inside its critical
// section, the next client takes the seat, and client 1 still writes its
// booking when it resumes, believing it holds the lock.
//
// Exercise: make the FAIL a PASS (step 6 does).
package main

import (
	"crypto/rand"
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

// release deletes KEYS[1] only if it holds ARGV[1], the caller's token.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

func main() {
	bench := contend.Open()
	defer bench.Close()
	key, row := bench.Key("C7"), bench.Key("seats:C7")
	var slowDone atomic.Bool
	var stuck atomic.Int32
	bench.Run(clients, func(client int) {
		for round, after := 0, 0; after < rounds && round < maxRounds; round++ {
			if slowDone.Load() {
				after++
			}
			token := rand.Text()
			got := bench.Retry(wait, func() (bool, error) {
				return bench.Redis.SetNX(bench.Ctx, key, token, lease).Result()
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
			contend.Check(bench.Redis.Set(bench.Ctx, row, client, 0).Err()) // the booking
			bench.Seat.Wrote(client)
			bench.Seat.Leave(client)
			slowDone.Store(slowDone.Load() || slow && round == slowRounds-1)
			contend.Check(release.Run(bench.Ctx, bench.Redis, []string{key}, token).Err())
		}
	})
	bench.Report(wait, stuck.Load())
	overlaps, _, stale := bench.Counts()
	bench.Verdict(stuck.Load() == 0 && overlaps == 0 && stale == 0, "only the latest holder wrote",
		"a paused holder wrote after its lease ran out and another client took the seat")
}
