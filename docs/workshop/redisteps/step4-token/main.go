// Step 4: an owner token. Every holder writes a random value of its own
// and releases only a key that still holds it. That stops step 3's late
// DEL. But "GET, compare, DEL" is three steps, and a pause between the
// compare and the DEL puts the same bug back.
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

	tokenA, tokenB, tokenC := rand.Text(), rand.Text(), rand.Text()
	ok, err := rdb.SetNX(ctx, key, tokenA, lease).Result()
	check(err)
	fmt.Println("A: SET NX PX with its token", ok)

	// A releases: GET, compare with its token, DEL.
	value, err := rdb.Get(ctx, key).Result()
	check(err)
	fmt.Println("A: GET says the key is mine:", value == tokenA)

	time.Sleep(lease + lease/4) // A pauses between the compare and the DEL
	ok, err = rdb.SetNX(ctx, key, tokenB, lease).Result()
	check(err)
	fmt.Println("B: SET NX PX with its token", ok, "(A's lease ran out)")

	check(rdb.Del(ctx, key).Err()) // A resumes and deletes
	fmt.Println("A: DEL")

	ok, err = rdb.SetNX(ctx, key, tokenC, lease).Result()
	check(err)
	fmt.Println("C: SET NX PX with its token", ok)
	if ok {
		fmt.Println("FAILURE: the check and the delete were two steps; B and C both hold the seat")
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
