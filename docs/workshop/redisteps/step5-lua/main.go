// Step 5: release in one Lua script. Redis runs a script without
// interleaving anybody else's commands, so "delete the key if it still
// holds my token" is one atomic step. A late release now deletes
// nothing. What is left is lab 6: A may still write after its lease ran
// out, believing it holds the lock.
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

// release deletes KEYS[1] only if it holds ARGV[1], the caller's token;
// it returns 1 when it deleted, 0 when the key was gone or not ours.
var release = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

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

	time.Sleep(lease + lease/4) // A pauses past its lease
	ok, err = rdb.SetNX(ctx, key, tokenB, lease).Result()
	check(err)
	fmt.Println("B: SET NX PX with its token", ok, "(A's lease ran out)")

	deleted, err := release.Run(ctx, rdb, []string{key}, tokenA).Int()
	check(err)
	fmt.Println("A: release script deleted", deleted, "key")

	ok, err = rdb.SetNX(ctx, key, tokenC, lease).Result()
	check(err)
	fmt.Println("C: SET NX PX with its token", ok)

	deleted, err = release.Run(ctx, rdb, []string{key}, tokenB).Int()
	check(err)
	fmt.Println("B: release script deleted", deleted, "key")
	if !ok && deleted == 1 {
		fmt.Println("SAFE: only the holder can release; but A's lease ran out while it worked (lab 6)")
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
