package zklock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock/zklock"
)

// A booking takes the locks of its seats, checks them before the write and
// writes with the fencing token. It needs a ZooKeeper server, so it has no
// Output block.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	locker, err := zklock.Dial(ctx, []string{"127.0.0.1:2181"}, 10*time.Second,
		zklock.Options{}, zk.WithLogInfo(false))
	if err != nil {
		fmt.Println(err) // no session within ctx: answer 503
		return
	}
	defer locker.Close()

	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lock, err := locker.Obtain(wait, "{screening-42}:C7", "{screening-42}:C8")
	if err != nil {
		fmt.Println(err) // distlock.ErrNotAcquired: seat_busy; else ZooKeeper is down
		return
	}
	defer lock.Release(context.WithoutCancel(ctx))

	// ... check the seats are free, take the payment ...
	if err := lock.Err(); err != nil {
		fmt.Println(err) // distlock.ErrLost: the session is gone; do not write
		return
	}
	fmt.Println("book C7 with fencing token", lock.Token("{screening-42}:C7"))
}
