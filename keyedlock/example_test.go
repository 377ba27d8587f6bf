package keyedlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seatlock/seatlock/keyedlock"
)

// One goroutine per customer tries to book the same seat. The keyed mutex
// lets exactly one of them find the seat free; the others find it taken,
// and bookings of other seats never wait for this one.
func Example() {
	var seats keyedlock.Mutex
	booked := map[string]string{} // seat -> customer; each seat guarded by its key

	book := func(ctx context.Context, seat, customer string) error {
		return seats.Do(ctx, seat, func() error {
			if _, taken := booked[seat]; taken {
				return fmt.Errorf("%s: seat taken", seat)
			}
			booked[seat] = customer
			return nil
		})
	}

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards wins and fails
		wins  int
		fails int
	)
	for _, customer := range []string{"ann", "bob", "cat", "dan"} {
		wg.Go(func() {
			err := book(context.Background(), "C7", customer)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else {
				fails++
			}
		})
	}
	wg.Wait()
	fmt.Println("bookings of C7:", wins, "refused:", fails)
	fmt.Println("keys still locked:", seats.Len())
	// Output:
	// bookings of C7: 1 refused: 3
	// keys still locked: 0
}

// A seat that stays busy longer than the caller will wait: Lock gives up
// when its context ends and returns the context's error, holding nothing.
func ExampleMutex_Lock() {
	var seats keyedlock.Mutex
	ctx := context.Background()

	if err := seats.Lock(ctx, "C7"); err != nil { // a slow booking holds C7
		fmt.Println(err)
		return
	}

	wait, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	err := seats.Lock(wait, "C7")
	fmt.Println("second booking:", err, errors.Is(err, context.DeadlineExceeded))

	seats.Unlock("C7")
	fmt.Println("keys still locked:", seats.Len())
	// Output:
	// second booking: context deadline exceeded true
	// keys still locked: 0
}

// TryLock never waits: it is for callers that prefer to answer "busy" at
// once.
func ExampleMutex_TryLock() {
	var seats keyedlock.Mutex
	fmt.Println(seats.TryLock("C7"))
	fmt.Println(seats.TryLock("C7"))
	seats.Unlock("C7")
	fmt.Println(seats.TryLock("C7"))
	seats.Unlock("C7")
	// Output:
	// true
	// false
	// true
}

// A booking of several seats takes all of them or none. The order the
// seats are given in does not matter: LockAll sorts them, so two bookings
// of overlapping seats cannot deadlock.
func ExampleMutex_LockAll() {
	var seats keyedlock.Mutex
	ctx := context.Background()

	unlock, err := seats.LockAll(ctx, "C8", "C7", "C8")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked:", seats.Len())
	fmt.Println("C7 free?", seats.TryLock("C7"))
	unlock()
	fmt.Println("after unlock:", seats.Len())
	// Output:
	// locked: 2
	// C7 free? false
	// after unlock: 0
}

// Do runs a function while holding a key and passes its error through.
func ExampleMutex_Do() {
	var seats keyedlock.Mutex
	errDeclined := errors.New("payment declined")

	err := seats.Do(context.Background(), "C7", func() error {
		return errDeclined
	})
	fmt.Println(errors.Is(err, errDeclined), seats.Len())
	// Output:
	// true 0
}

// The interleaving that breaks keyedlock/naive, replayed on Mutex: A
// holds C7, B waits for it, A unlocks and B takes over. Then C comes. The
// naive mutex had deleted C7's entry on A's Unlock, so C found no lock and
// got in beside B. Mutex keeps an entry while anybody holds or waits for
// it, so C has to wait for B. Workshop lab 3 runs this next to the naive
// mutex's test.
func ExampleMutex_naiveUnlock() {
	var seats keyedlock.Mutex
	ctx := context.Background()

	_ = seats.Lock(ctx, "C7") // A holds C7
	bHolds := make(chan struct{})
	go func() {
		_ = seats.Lock(ctx, "C7") // B waits for A
		close(bHolds)
	}()
	time.Sleep(10 * time.Millisecond) // let B start waiting (the output is the same if it has not)
	seats.Unlock("C7")                // A is done: B takes over
	<-bHolds

	fmt.Println("C gets C7 while B holds it:", seats.TryLock("C7"))
	fmt.Println("keys locked:", seats.Len())
	seats.Unlock("C7") // B is done
	fmt.Println("C gets C7 after B:", seats.TryLock("C7"))
	seats.Unlock("C7")
	// Output:
	// C gets C7 while B holds it: false
	// keys locked: 1
	// C gets C7 after B: true
}
