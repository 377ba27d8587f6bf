// Step 2: SETNX, then PEXPIRE. The key now frees itself after a lease,
// but only once the second command has run. Client 0 crashes between
// the two: the key is left as step 1 left it.
//
// Exercise: make the FAIL a PASS (step 3 does, with one command).
package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seatlock/seatlock/docs/workshop/redisteps/contend"
)

const (
	clients   = 5
	rounds    = 5                      // turns each client takes after the crash
	maxRounds = 500                    // bound on the turns before it
	work      = 10 * time.Millisecond  // the critical section: a payment
	lease     = 500 * time.Millisecond // the key frees itself after this
	wait      = 10 * lease             // longest a client waits for the seat
)

func main() {
	bench := contend.Open()
	defer bench.Close()
	key := bench.Key("C7")
	var crashed atomic.Bool
	var stuck atomic.Int32
	bench.Run(clients, func(client int) {
		for round, after := 0, 0; after < rounds && round < maxRounds; round++ {
			if crashed.Load() {
				after++
			}
			got := bench.Retry(wait, func() (bool, error) {
				return bench.Redis.SetNX(bench.Ctx, key, client, 0).Result()
			})
			if !got {
				stuck.Add(1)
				return
			}
			if client == 0 {
				crashed.Store(true)
				return // client 0 crashes here: its PEXPIRE never runs
			}
			contend.Check(bench.Redis.PExpire(bench.Ctx, key, lease).Err())
			bench.Seat.Enter(client, false)
			time.Sleep(work)
			bench.Seat.Leave(client)
			contend.Check(bench.Redis.Del(bench.Ctx, key).Err())
		}
	})
	ttl, err := bench.Redis.TTL(bench.Ctx, key).Result()
	contend.Check(err)
	overlaps, _, _ := bench.Counts()
	fmt.Println("overlaps:", overlaps)
	fmt.Printf("clients that gave up after %s: %d of %d\n", wait, stuck.Load(), clients-1)
	fmt.Println("the key never expires (TTL -1):", ttl == -1)
	bench.Verdict(stuck.Load() == 0, "every client got the seat after the crash",
		"two commands are not one; a crash between them locked the seat for ever")
}
