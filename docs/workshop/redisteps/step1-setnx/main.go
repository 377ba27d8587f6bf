// Step 1: SETNX. "Set if not exists" takes a key only when nobody holds
// it, which is a lock. Five clients take turns on one seat; client 0
// crashes while it holds it: its DEL never runs, and nothing else ever
// deletes the key. The others wait a bounded time, then give up.
//
// Exercise: make the FAIL a PASS (step 2 tries, step 3 succeeds).
package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seatlock/seatlock/docs/workshop/redisteps/contend"
)

const (
	clients   = 5
	rounds    = 5                     // turns each client takes after the crash
	maxRounds = 500                   // bound on the turns before it
	work      = 10 * time.Millisecond // the critical section: a payment
	wait      = 5 * time.Second       // longest a client waits for the seat
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
			bench.Seat.Enter(client, false)
			time.Sleep(work)
			bench.Seat.Leave(client)
			if client == 0 {
				crashed.Store(true)
				return // client 0 crashes here: its DEL never runs
			}
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
		"a crashed holder locked the seat for ever")
}
