// Step 8: several seats, all or nothing. A booking of two seats must
// hold both locks or none: taken one at a time, a client can hold C7
// while it waits for C8, blocking others for a seat it may never book.
// Each script of step 7 now runs over a list of keys: acquire takes every
// key or none and hands out a fencing token per seat, the write refuses
// the booking if any seat has seen a newer token, and renewal and release
// touch every key. Five clients book pairs of three seats; after every
// failed attempt the client checks that it holds none of its keys.
//
// This is the lock of distlock, in its plain form: distlock/acquire.lua
// and distlock/redis_lock.go take several keys with fencing tokens, and
// distlock/internal/watchdog/watchdog.go renews every held lease.
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

// acquire takes the n lock keys KEYS[1..n], set to ARGV[1] for ARGV[2]
// ms, if all are free, and returns one fencing token per key from the
// counters KEYS[n+1..2n]; an empty list when any is held.
var acquire = redis.NewScript(`
local n = #KEYS / 2
for i = 1, n do
	if redis.call("EXISTS", KEYS[i]) == 1 then
		return {}
	end
end
local fences = {}
for i = 1, n do
	redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
	fences[i] = redis.call("INCR", KEYS[n + i])
end
return fences`)

// write books every seat row KEYS[i] for ARGV[1] with the fencing token
// ARGV[i+1], unless any row has a larger one; 1 written, 0 refused.
var write = redis.NewScript(`
for i = 1, #KEYS do
	if tonumber(ARGV[i + 1]) < tonumber(redis.call("HGET", KEYS[i], "fence") or "0") then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("HSET", KEYS[i], "fence", ARGV[i + 1], "booked_by", ARGV[1])
end
return 1`)

// extend sets the lease of every key to ARGV[2] ms if all still hold ARGV[1].
var extend = redis.NewScript(`
for i = 1, #KEYS do
	if redis.call("GET", KEYS[i]) ~= ARGV[1] then
		return 0
	end
end
for i = 1, #KEYS do
	redis.call("PEXPIRE", KEYS[i], ARGV[2])
end
return 1`)

// release deletes each key that still holds ARGV[1], the caller's token.
var release = redis.NewScript(`
local n = 0
for i = 1, #KEYS do
	if redis.call("GET", KEYS[i]) == ARGV[1] then
		n = n + redis.call("DEL", KEYS[i])
	end
end
return n`)

// pairs are the bookings: client i books pairs[i%3].
var pairs = [][]string{{"C7", "C8"}, {"C8", "C9"}, {"C9", "C7"}}

func main() {
	bench := contend.Open()
	defer bench.Close()
	var slowDone atomic.Bool
	var stuck, refused, lost, partial atomic.Int32
	bench.Run(clients, func(client int) {
		seats := pairs[client%len(pairs)]
		keys, locks, rows := keysOf(bench, seats)
		for round, after := 0, 0; after < rounds && round < maxRounds; round++ {
			if slowDone.Load() {
				after++
			}
			token, fences := rand.Text(), []int64{}
			got := bench.Retry(wait, func() (bool, error) {
				var err error
				fences, err = acquire.Run(bench.Ctx, bench.Redis, keys, token, lease.Milliseconds()).Int64Slice()
				if err == nil && len(fences) == 0 && holdsAny(bench, locks, token) {
					partial.Add(1)
				}
				return len(fences) > 0, err
			})
			if !got {
				stuck.Add(1)
				return
			}
			dog := watch(bench, locks, token)
			slow := client == 1 && round < slowRounds
			for _, seat := range seats {
				bench.Section(seat).Enter(client, slow)
			}
			if slow {
				time.Sleep(pause)
			} else {
				time.Sleep(work)
			}
			if dog.stop() {
				lost.Add(1) // the lease ran out: the booking is dropped
			} else if book(bench, rows, client, fences) {
				for _, seat := range seats {
					bench.Section(seat).Wrote(client)
				}
			} else {
				refused.Add(1)
			}
			for _, seat := range seats {
				bench.Section(seat).Leave(client)
			}
			slowDone.Store(slowDone.Load() || slow && round == slowRounds-1)
			contend.Check(release.Run(bench.Ctx, bench.Redis, locks, token).Err())
		}
	})
	bench.Report(wait, stuck.Load())
	overlaps, pauses, stale := bench.Counts()
	fmt.Println("writes refused for a stale fencing token:", refused.Load())
	fmt.Println("bookings dropped for a lost lease:", lost.Load())
	fmt.Println("failed attempts that left a seat held:", partial.Load())
	bench.Verdict(stuck.Load() == 0 && overlaps+pauses == 0 && stale == 0 && partial.Load() == 0,
		"every booking held all its seats or none; one holder per seat",
		"two holders at once, or a failed booking held some of its seats")
}

// keysOf names the keys of seats: the script's keys (the locks, then
// their fence counters), the locks alone, and the seat rows.
func keysOf(bench *contend.Bench, seats []string) (keys, locks, rows []string) {
	var fences []string
	for _, seat := range seats {
		locks = append(locks, bench.Key(seat))
		fences = append(fences, bench.Key("fence:"+seat))
		rows = append(rows, bench.Key("seats:"+seat))
	}
	return append(append(keys, locks...), fences...), locks, rows
}

// book writes the booking of client on rows with their fencing tokens.
func book(bench *contend.Bench, rows []string, client int, fences []int64) bool {
	args := []any{client}
	for _, f := range fences {
		args = append(args, f)
	}
	ok, err := write.Run(bench.Ctx, bench.Redis, rows, args...).Bool()
	contend.Check(err)
	return ok
}

// holdsAny tells whether any of keys holds token.
func holdsAny(bench *contend.Bench, keys []string, token string) bool {
	for _, key := range keys {
		value, err := bench.Redis.Get(bench.Ctx, key).Result()
		if err == nil && value == token {
			return true
		}
	}
	return false
}

// watchdog renews one lock until it is stopped or a renewal fails.
type watchdog struct {
	done chan struct{} // closed to stop the goroutine
	lost chan bool     // receives, once, whether a renewal failed
}

// watch starts the watchdog of the lock on keys held with token; the
// caller owns it and must call stop.
func watch(bench *contend.Bench, keys []string, token string) *watchdog {
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
				n, err := extend.Run(bench.Ctx, bench.Redis, keys, token, lease.Milliseconds()).Int()
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
