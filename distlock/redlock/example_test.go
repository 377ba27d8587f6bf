package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/redlock"
)

// exampleNodes starts n miniredis servers, Redis servers inside the test
// process, so that the examples run anywhere. In production each client
// points at a Redis server of its own, on a machine of its own.
func exampleNodes(n int) (nodes []*miniredis.Miniredis, clients []redlock.Client, stop func()) {
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			panic(err) // a test binary that cannot listen on loopback cannot run examples
		}
		// As the package doc advises: NodeTimeout cuts a hung node
		// short, and a dead node fails at once instead of being redialled.
		c := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
		nodes, clients = append(nodes, m), append(clients, c)
	}
	return nodes, clients, func() {
		for i := range nodes {
			_ = clients[i].(*redis.Client).Close()
			nodes[i].Close()
		}
	}
}

func Example() {
	nodes, clients, stop := exampleNodes(3)
	defer stop()
	// The fence clock reads the Unix epoch, so that the tokens count from
	// 1; by default a token is at least the client's clock in microseconds
	// ("Fencing, as far as Redlock allows" in the package doc).
	epoch := func() time.Time { return time.Unix(0, 0) }
	// A node that answers within NodeTimeout counts towards the quorum;
	// half a second leaves room for a loaded machine.
	opts := redlock.Options{TTL: 10 * time.Second, NodeTimeout: 500 * time.Millisecond, Fencing: true, FenceClock: epoch}
	locker := redlock.New(clients, opts)
	defer locker.Close()
	// Obtain waits for a quorum as long as its context allows: never
	// without a deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
	if err != nil {
		fmt.Println("obtain:", err)
		return
	}
	fmt.Println("C7 fencing token:", lock.Token("{screening-42}:C7"))
	fmt.Println("release:", lock.Release(ctx))

	// One node of three goes down: a quorum of two still grants locks.
	nodes[0].Close()
	lock, err = locker.Obtain(ctx, "{screening-42}:C7")
	if err != nil {
		fmt.Println("obtain:", err)
		return
	}
	fmt.Println("with one node down, C7 fencing token:", lock.Token("{screening-42}:C7"))
	fmt.Println("release:", lock.Release(ctx))

	// Two of three down: no quorum. Obtain fails at once with
	// ErrUnavailable (a 503), not after the caller's lock wait.
	nodes[1].Close()
	_, err = locker.Obtain(ctx, "{screening-42}:C7")
	fmt.Println("with two nodes down, unavailable:", errors.Is(err, redlock.ErrUnavailable))
	fmt.Println("with two nodes down, not acquired:", errors.Is(err, distlock.ErrNotAcquired))
	// Output:
	// C7 fencing token: 1
	// release: <nil>
	// with one node down, C7 fencing token: 2
	// release: <nil>
	// with two nodes down, unavailable: true
	// with two nodes down, not acquired: false
}

func ExampleLocker_TryObtain() {
	_, clients, stop := exampleNodes(3)
	defer stop()
	// A node that answers within NodeTimeout counts towards the quorum;
	// half a second leaves room for a loaded test machine.
	opts := redlock.Options{NodeTimeout: 500 * time.Millisecond}
	a, b := redlock.New(clients, opts), redlock.New(clients, opts)
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, err := a.TryObtain(ctx, "{screening-42}:C7")
	if err != nil {
		fmt.Println("obtain:", err)
		return
	}
	_, err = b.TryObtain(ctx, "{screening-42}:C7")
	fmt.Println("held elsewhere:", errors.Is(err, distlock.ErrNotAcquired))
	_ = lock.Release(ctx)
	lock, err = b.TryObtain(ctx, "{screening-42}:C7")
	fmt.Println("after release:", err)
	if err == nil {
		_ = lock.Release(ctx)
	}
	// Output:
	// held elsewhere: true
	// after release: <nil>
}
