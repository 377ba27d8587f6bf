// Package contend is the bench every redisteps program runs on: a real
// Redis, several goroutines that contend for the same seat, and a
// critical section that counts what really happened in it, so a step's
// PASS or FAIL is computed, never written in advance.
//
//	bench := contend.Open()
//	defer bench.Close()
//	key := bench.Key("C7") // deleted by Close
//	bench.Run(4, func(client int) { ... bench.Seat.Enter(client, false) ... })
//	bench.Verdict(bench.Seat.Overlaps() == 0, "one holder at a time", "two holders at once")
package contend

import (
	"context"
	"crypto/rand"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bench is one program's Redis client, its keys and the seats its
// clients contend for.
type Bench struct {
	Ctx    context.Context
	Redis  *redis.Client
	Seat   *Section // the seat C7, the one most steps use
	mu     sync.Mutex
	seats  map[string]*Section // guarded by mu; every seat by name, C7 included
	prefix string
	cancel context.CancelFunc
}

// Open connects to REDIS_URL (default redis://127.0.0.1:6379/0); every
// Redis call of the program ends within a minute.
func Open() *Bench {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	Check(err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	seat := NewSection()
	return &Bench{Ctx: ctx, Redis: redis.NewClient(opts), Seat: seat,
		seats: map[string]*Section{"C7": seat}, prefix: "workshop:" + rand.Text() + ":", cancel: cancel}
}

// Section returns the critical section of the seat name.
func (b *Bench) Section(name string) *Section {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seats[name] == nil {
		b.seats[name] = NewSection()
	}
	return b.seats[name]
}

// Key names a key of this run only.
func (b *Bench) Key(name string) string { return b.prefix + name }

// Close deletes every key of this run and closes the client.
func (b *Bench) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := b.Redis.Scan(ctx, 0, b.prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		b.Redis.Del(ctx, iter.Val())
	}
	b.Redis.Close()
	b.cancel()
}

// Run starts n clients, numbered from 0, and returns when all have.
func (b *Bench) Run(n int, client func(client int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { client(i) })
	}
	wg.Wait()
}

// Retry calls try every few milliseconds until it reports true, the wait
// runs out or it fails; it tells whether try succeeded. Each try comes
// after a random wait of up to 5ms, so the client that just released the
// seat has no head start on those that were waiting for it.
func (b *Bench) Retry(wait time.Duration, try func() (bool, error)) bool {
	deadline := time.Now().Add(wait)
	for {
		time.Sleep(mathrand.N(5 * time.Millisecond))
		ok, err := try()
		Check(err)
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Verdict prints PASS with what held, or FAIL with what went wrong.
func (b *Bench) Verdict(ok bool, pass, fail string) {
	if ok {
		fmt.Println("PASS:", pass)
		return
	}
	fmt.Println("FAIL:", fail)
}

// Check ends the program on a Redis error: a step judges locks, not a
// broken connection.
func Check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "redisteps:", err)
		os.Exit(1)
	}
}

// Report prints what the clients saw: how many gave up waiting, then the
// counts of every seat together (see Section).
func (b *Bench) Report(wait time.Duration, gaveUp int32) {
	overlaps, pauses, stale := b.Counts()
	fmt.Printf("clients that gave up after %s: %d\n", wait, gaveUp)
	fmt.Println("entries beside a holder paused past its lease:", pauses)
	fmt.Println("entries beside a holder in its lease:", overlaps)
	fmt.Println("writes accepted from a holder whose lease ran out:", stale)
}

// Counts adds up the counts of every seat (see Section.Counts).
func (b *Bench) Counts() (overlaps, pauses, stale int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, seat := range b.seats {
		o, p, s := seat.Counts()
		overlaps, pauses, stale = overlaps+o, pauses+p, stale+s
	}
	return overlaps, pauses, stale
}
