package pglock_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/distlock/pglock"
)

// The examples need a Postgres server, so they are compiled but not run.

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A pool of its own: every held or waiting lock has a connection.
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL")+"&pool_max_conns=32")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()
	locker := pglock.New(pool, pglock.Options{TTL: 10 * time.Second})

	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
	if err != nil {
		fmt.Println(err) // ErrNotAcquired when ctx ended first; else Postgres is down
		return
	}
	defer lock.Release(context.WithoutCancel(ctx))
	// ... check the seats are free, take the payment ...
	if err := lock.Err(); err != nil {
		fmt.Println("the session ended, not writing:", err)
		return
	}
	fmt.Println("write C7 with fencing token", lock.Token("{screening-42}:C7"))
}

func ExampleXactLock() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close()

	// The lock lives exactly as long as the transaction that writes the
	// booking: both commit, or neither.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := pglock.XactLock(ctx, tx, "{screening-42}:C7", "{screening-42}:C8"); err != nil {
			return err
		}
		// ... check the seats are free, insert the booking ...
		return nil
	})
	fmt.Println(err)
}
