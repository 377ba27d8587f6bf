// Step 3: SET key value NX PX ttl. One command takes the key and gives it
// a lease, so a crash can no longer leave it for ever. But every holder
// writes the same value, so a holder whose lease ran out cannot tell that
// the key it deletes is somebody else's.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

const lease = 2 * time.Second

func main() {
	ctx := context.Background()
	rdb := client()
	defer rdb.Close()
	key := "workshop:" + rand.Text() + ":C7"
	defer rdb.Del(ctx, key)

	ok, err := rdb.SetNX(ctx, key, "locked", lease).Result()
	check(err)
	fmt.Println("A: SET NX PX", ok)

	time.Sleep(lease + lease/4) // A's payment takes longer than its lease

	ok, err = rdb.SetNX(ctx, key, "locked", lease).Result()
	check(err)
	fmt.Println("B: SET NX PX", ok, "(A's lease ran out)")

	check(rdb.Del(ctx, key).Err()) // A is done and releases "its" lock
	fmt.Println("A: DEL")

	ok, err = rdb.SetNX(ctx, key, "locked", lease).Result()
	check(err)
	fmt.Println("C: SET NX PX", ok)
	if ok {
		fmt.Println("FAILURE: A deleted B's lock; B and C both hold the seat")
	}
}

func client() *redis.Client {
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	check(err)
	return redis.NewClient(opts)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
