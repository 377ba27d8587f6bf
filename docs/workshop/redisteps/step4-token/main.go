// Step 4: an owner token. Every holder writes a random value of its own
// and releases only a key that still holds it: GET, compare, DEL. That
// stops step 3's late DEL when the pause falls before the GET. But it is
// three steps, and client 1 pauses past its lease between the compare and
// the DEL: the same bug is back.
//
// Exercise: make the FAIL a PASS (step 5 does).
package main

import (
	"crypto/rand"
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
	pause      = lease * 5 / 2 // a stall that outlasts the lease
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
			token := rand.Text()
			got := bench.Retry(wait, func() (bool, error) {
				return bench.Redis.SetNX(bench.Ctx, key, token, lease).Result()
			})
			if !got {
				stuck.Add(1)
				return
			}
			bench.Seat.Enter(client, false)
			time.Sleep(work)
			bench.Seat.Leave(client)
			value, err := bench.Redis.Get(bench.Ctx, key).Result()
			contend.Check(err)
			if client == 1 && round < slowRounds {
				time.Sleep(pause) // client 1 stalls between the compare and the DEL
			}
			slowDone.Store(slowDone.Load() || client == 1 && round == slowRounds-1)
			if value == token {
				contend.Check(bench.Redis.Del(bench.Ctx, key).Err())
			}
		}
	})
	bench.Report(wait, stuck.Load())
	overlaps, _, _ := bench.Counts()
	bench.Verdict(stuck.Load() == 0 && overlaps == 0, "one holder at a time",
		"the compare and the DEL were two steps; a late DEL let two holders in at once")
}
