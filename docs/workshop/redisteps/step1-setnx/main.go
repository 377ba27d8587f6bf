// Step 1: SETNX. "Set if not exists" takes a key only when nobody holds
// it, which is a lock. But a holder that crashes never deletes the key,
// and nothing else ever will.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
)

func main() {
	ctx := context.Background()
	rdb := client()
	defer rdb.Close()
	key := "workshop:" + rand.Text() + ":C7"
	defer rdb.Del(ctx, key)

	ok, err := rdb.SetNX(ctx, key, "A", 0).Result()
	check(err)
	fmt.Println("A: SETNX", ok) // A holds the seat

	// A crashes here: its DEL never runs.

	ok, err = rdb.SetNX(ctx, key, "B", 0).Result()
	check(err)
	fmt.Println("B: SETNX", ok)
	ttl, err := rdb.TTL(ctx, key).Result()
	check(err)
	fmt.Println("the key never expires (TTL -1):", ttl == -1)
	fmt.Println("FAILURE: the key never expires; the seat is locked for ever")
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
