package flock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/flock"
)

func Example() {
	dir, _ := os.MkdirTemp("", "seatlock-locks")
	defer os.RemoveAll(dir)
	locker, err := flock.New(dir, flock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
	if err != nil {
		fmt.Println("obtain:", err)
		return
	}
	// Another process (here: another Locker, another open file) is refused.
	other, _ := flock.New(dir, flock.Options{})
	_, err = other.TryObtain(ctx, "{screening-42}:C7")
	fmt.Println("other process:", errors.Is(err, distlock.ErrNotAcquired))

	fmt.Println("write C7 with fencing token", lock.Token("{screening-42}:C7"))
	fmt.Println("release:", lock.Release(ctx))

	lock, _ = other.Obtain(ctx, "{screening-42}:C7")
	fmt.Println("next holder of C7 gets token", lock.Token("{screening-42}:C7"))
	_ = lock.Release(ctx)
	// Output:
	// other process: true
	// write C7 with fencing token 1
	// release: <nil>
	// next holder of C7 gets token 2
}

// The file name is the SHA-256 of the key, as sha256sum computes it:
//
//	printf %s "{screening-42}:C7" | sha256sum
func ExampleLocker_Path() {
	locker, _ := flock.New(os.TempDir(), flock.Options{})
	fmt.Println(locker.Path("{screening-42}:C7")[len(os.TempDir())+1:])
	// Output:
	// d5f3258885fca09841e6a5d123b1e9f4e470835536343ebfe1b23d6abd009a92.lock
}
