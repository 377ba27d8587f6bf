// Step 2: SETNX, then EXPIRE. The key now frees itself after a while,
// but only once the second command has run: a crash between the two
// leaves the key as step 1 did.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	rdb := client()
	defer rdb.Close()
	key := "workshop:" + rand.Text() + ":C7"
	defer rdb.Del(ctx, key)

	// The good case: both commands run.
	ok, err := rdb.SetNX(ctx, key, "A", 0).Result()
	check(err)
	check(rdb.Expire(ctx, key, 10*time.Second).Err())
	ttl, err := rdb.TTL(ctx, key).Result()
	check(err)
	fmt.Println("A: SETNX", ok, "then EXPIRE: TTL", ttl)
	check(rdb.Del(ctx, key).Err())

	// The bad case: B takes the key and crashes before its EXPIRE.
	ok, err = rdb.SetNX(ctx, key, "B", 0).Result()
	check(err)
	fmt.Println("B: SETNX", ok)
	// B crashes here: its EXPIRE never runs.
	ttl, err = rdb.TTL(ctx, key).Result()
	check(err)
	fmt.Println("the key never expires (TTL -1):", ttl == -1)
	fmt.Println("FAILURE: two commands are not one; a crash between them locks the seat for ever")
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
