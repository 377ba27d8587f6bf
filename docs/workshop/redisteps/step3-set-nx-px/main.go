// Step 3: SET key value NX PX ttl. One command takes the key and gives it
// a lease, so client 0's crash now frees the seat once the lease runs
// out. But every holder writes the same value: client 1, paused past its
// lease three times, comes back and deletes a key that is no longer its
// own, and the next client walks in beside the real holder.
//
// Exercise: make the FAIL a PASS (step 4 tries, step 5 succeeds).
package main

import (
	"sync/atomic"
	"time"

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

func main() {
	bench := contend.Open()
	defer bench.Close()
	key := bench.Key("C7")
	var slowDone atomic.Bool
	var stuck atomic.Int32
	bench.Run(clients, func(client int) {
		for round, after := 0, 0; after < rounds && round < maxRounds; round++ {
			if slowDone.Load() {
				after++
			}
			got := bench.Retry(wait, func() (bool, error) {
				return bench.Redis.SetNX(bench.Ctx, key, "locked", lease).Result()
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
			bench.Seat.Leave(client)
			if client == 0 && round == 0 {
				continue // client 0 crashes here, once: its DEL never runs
			}
			slowDone.Store(slowDone.Load() || client == 1 && round == slowRounds-1)
			contend.Check(bench.Redis.Del(bench.Ctx, key).Err())
		}
	})
	bench.Report(wait, stuck.Load())
	overlaps, _, _ := bench.Counts()
	bench.Verdict(stuck.Load() == 0 && overlaps == 0, "one holder at a time",
		"a late DEL freed another client's lock; two holders at once")
}
