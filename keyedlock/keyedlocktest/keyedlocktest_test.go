package keyedlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seatlock/seatlock/keyedlock"
	"github.com/seatlock/seatlock/keyedlock/keyedlocktest"
	"github.com/seatlock/seatlock/keyedlock/naive"
)

func TestKeyedlockConforms(t *testing.T) {
	keyedlocktest.Run(t, func() keyedlocktest.Mutex { return new(keyedlock.Mutex) })
}

// forgetful is the keyed mutex most of us write first (package
// keyedlock/naive): it deletes a key's entry on Unlock even while someone
// waits on it. Its Lock ignores the context, and Len is not checked here.
type forgetful struct{ naive.Mutex }

func (f *forgetful) Lock(_ context.Context, key string) error { f.Mutex.Lock(key); return nil }
func (f *forgetful) Len() int                                 { return 0 }

// TestContendCatchesTheForgetfulMutex shows the suite's exclusion check can
// fail: it must see two holders of a key in the mutex that forgets keys
// someone waits on, inside a critical section or as the panic of an
// Unlock whose mutex the other holder had already unlocked.
func TestContendCatchesTheForgetfulMutex(t *testing.T) {
	for range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // a run can deadlock
		c := keyedlocktest.Contend(ctx, new(forgetful), 3, 12, 300)
		cancel()
		if c.Overlaps > 0 || errors.Is(c.Err, keyedlocktest.ErrPanicked) {
			t.Logf("caught: %d overlaps, %v", c.Overlaps, c.Err)
			return
		}
		if c.Err != nil {
			t.Fatal(c.Err)
		}
	}
	t.Fatal("no overlap seen in 20 runs on a mutex that lets two goroutines hold one key")
}
