package distlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
)

// The examples run on miniredis, a Redis server inside the test process,
// so they run anywhere. In production the client points at a real Redis.
func exampleServer() (*miniredis.Miniredis, *redis.Client) {
	server := miniredis.NewMiniRedis()
	if err := server.Start(); err != nil {
		panic(err) // a test binary that cannot listen on loopback cannot run examples
	}
	// The server's clock reads the Unix epoch, so that the fencing tokens
	// of the examples count from 1. A real server's tokens are at least its
	// clock in microseconds ("Fencing tokens" in the package doc): large
	// numbers, increasing just the same.
	server.SetTime(time.Unix(0, 0))
	return server, redis.NewClient(&redis.Options{Addr: server.Addr()})
}

func Example() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	locker := distlock.NewRedis(client, distlock.RedisOptions{})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Two seats of one screening, all or nothing. The hash tag keeps
	// them in one Redis Cluster slot.
	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
	if err != nil {
		fmt.Println("obtain:", err)
		return
	}
	// ... check the seats are free, take the payment ...
	if err := lock.Err(); err != nil {
		fmt.Println("lock lost, not writing:", err)
		return
	}
	fmt.Println("write C7 with fencing token", lock.Token("{screening-42}:C7"))
	fmt.Println("release:", lock.Release(ctx))

	// The next holder's fencing token is higher: storage can refuse the
	// late write of a holder that lost the lock without knowing it.
	lock, _ = locker.Obtain(ctx, "{screening-42}:C7")
	fmt.Println("next holder of C7 gets token", lock.Token("{screening-42}:C7"))
	_ = lock.Release(ctx)
	// Output:
	// write C7 with fencing token 1
	// release: <nil>
	// next holder of C7 gets token 2
}

func ExampleRedis_TryObtain() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	locker := distlock.NewRedis(client, distlock.RedisOptions{})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, _ := locker.Obtain(ctx, "{screening-42}:C7")
	defer lock.Release(ctx)

	// Another instance of the service, with its own client.
	other := distlock.NewRedis(redis.NewClient(&redis.Options{Addr: server.Addr()}), distlock.RedisOptions{})
	defer other.Close()
	_, err := other.TryObtain(ctx, "{screening-42}:C8", "{screening-42}:C7")
	fmt.Println(errors.Is(err, distlock.ErrNotAcquired))
	fmt.Println(err)
	// Nothing of the refused set was taken:
	c8, err := other.TryObtain(ctx, "{screening-42}:C8")
	fmt.Println("C8 alone:", err)
	_ = c8.Release(ctx)
	// Output:
	// true
	// distlock: not acquired: "{screening-42}:C7" is held
	// C8 alone: <nil>
}

func ExampleRedis_Obtain_wait() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	// A poll interval of a minute: only the release notification can
	// wake the waiter in time.
	locker := distlock.NewRedis(client, distlock.RedisOptions{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	holder, _ := locker.Obtain(ctx, "{screening-42}:C7")
	got := make(chan distlock.Lock)
	go func() {
		// Waits as long as its context allows: here, 10 seconds.
		lock, err := locker.Obtain(ctx, "{screening-42}:C7")
		if err != nil {
			fmt.Println("waiter:", err)
		}
		got <- lock
	}()
	// Most likely the waiter is waiting by now; the output is the same
	// if it is not, and it then takes C7 at its first attempt.
	time.Sleep(100 * time.Millisecond)
	_ = holder.Release(ctx)
	lock := <-got
	if lock == nil {
		return
	}
	fmt.Println("waiter holds C7 with token", lock.Token("{screening-42}:C7"))
	_ = lock.Release(ctx)
	// Output:
	// waiter holds C7 with token 2
}

func ExampleLock_Err() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	locker := distlock.NewRedis(client, distlock.RedisOptions{})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, _ := locker.Obtain(ctx, "{screening-42}:C7")
	fmt.Println("held:", lock.Err())

	// The key vanishes: its lease ran out during a long pause, or a
	// failover lost it. The next renewal finds it gone.
	server.FlushAll()
	fmt.Println("refresh:", lock.Refresh(ctx))
	<-lock.Lost()
	fmt.Println("lost:", errors.Is(lock.Err(), distlock.ErrLost))
	fmt.Println("release:", lock.Release(ctx))
	// Output:
	// held: <nil>
	// refresh: distlock: not held
	// lost: true
	// release: distlock: not held: 1 of the 1 keys of ["{screening-42}:C7"] had expired
}

// renewalCount counts the watchdog's successful renewals.
type renewalCount struct{ n atomic.Int64 }

func (r *renewalCount) Renewed(err error) {
	if err == nil {
		r.n.Add(1)
	}
}
func (r *renewalCount) Lost() {}

// A lock held longer than its lease: the watchdog renews it every
// RenewEvery, so the holder keeps it for as long as it lives. Workshop
// lab 6 shows the same on a running service.
func ExampleRedis_Obtain_watchdog() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	observed := new(renewalCount)
	locker := distlock.NewRedis(client, distlock.RedisOptions{
		TTL:        time.Second,
		RenewEvery: 100 * time.Millisecond,
		Observer:   observed,
	})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, _ := locker.Obtain(ctx, "{screening-42}:C7")
	// A payment twice as long as the lease. The lease is long enough
	// that a loaded machine, late with a renewal, still renews in time.
	time.Sleep(2 * time.Second)
	fmt.Println("still held:", lock.Err())
	fmt.Println("renewed:", observed.n.Load() > 0)
	fmt.Println("release:", lock.Release(ctx))
	// Output:
	// still held: <nil>
	// renewed: true
	// release: <nil>
}

// Fencing: the holder of token 1 pauses past its lease, a second holder
// takes the seat with token 2 and writes, and then the first wakes up and
// writes too. The storage, not the lock, refuses the late write, because
// it remembers the highest token it has seen for the seat.
func ExampleLock_Token() {
	server, client := exampleServer()
	defer server.Close()
	defer client.Close()
	locker := distlock.NewRedis(client, distlock.RedisOptions{TTL: time.Second, RenewEvery: -1})
	defer locker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const seat = "{screening-42}:C7"

	// seats is the storage: for each seat, its holder and the highest
	// fencing token a write has carried.
	type row struct {
		customer string
		token    int64
	}
	seats := map[string]row{}
	write := func(customer string, token int64) {
		if token <= seats[seat].token {
			fmt.Printf("%s writes with token %d: refused, the seat has seen %d\n", customer, token, seats[seat].token)
			return
		}
		seats[seat] = row{customer, token}
		fmt.Printf("%s writes with token %d: ok\n", customer, token)
	}

	ann, _ := locker.Obtain(ctx, seat)
	server.FastForward(2 * time.Second) // ann pauses; her lease runs out
	bob, err := locker.Obtain(ctx, seat)
	fmt.Println("bob obtains:", err)
	write("bob", bob.Token(seat))
	write("ann", ann.Token(seat)) // ann wakes up and writes without checking
	fmt.Println("C7 belongs to", seats[seat].customer)
	_ = bob.Release(ctx)
	_ = ann.Release(ctx)
	// Output:
	// bob obtains: <nil>
	// bob writes with token 2: ok
	// ann writes with token 1: refused, the seat has seen 2
	// C7 belongs to bob
}
