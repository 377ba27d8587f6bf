package faults

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
)

// lockKey is the Redis key of a seat's lock (distlock's default prefix and
// reservation.SeatKey; see the "Redis keys" section of the distlock package
// comment).
func lockKey(screeningID, seat string) string {
	return "seatlock:lock:" + reservation.SeatKey(screeningID, seat)
}

// owner returns the owner token in the value of a lock key: the value less
// the "+" a waiter leaves on a key it failed to take (see "Redis keys" in
// the distlock package comment).
func owner(value string) string { return strings.TrimSuffix(value, "+") }

// waitLocked waits until every seat's lock key exists and returns their
// owner tokens by seat.
func waitLocked(t *testing.T, rc *redis.Client, screeningID string, seats ...string) map[string]string {
	t.Helper()
	owners := map[string]string{}
	waitFor(t, 10*time.Second, "the seat locks are taken", func() bool {
		for _, s := range seats {
			v, err := rc.Get(context.Background(), lockKey(screeningID, s)).Result()
			if err != nil {
				return false
			}
			owners[s] = owner(v)
		}
		return true
	})
	return owners
}

// TestHolderCrash kills an instance while it holds the locks of a
// three-seat booking, in the middle of its payment.
func TestHolderCrash(t *testing.T) {
	faultTest(t)
	const ttl = time.Second
	redisURL := testenv.RedisURL(t)
	env := map[string]string{
		"REDIS_URL":    redisURL,
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     ttl.String(),
		"LOCK_WAIT":    "5s",
	}
	a, b := startAPI(t, env), startAPI(t, env)
	rc := testenv.RedisClient(t, redisURL)
	s := createScreening(t, a.url, `{"movie":"Crash","rows":1,"seats_per_row":6,"payment_delay_ms":3000}`)
	seats := []string{"A2", "A3", "A4"}

	pending := bookAsync(a.url, s.ID, "crashing", seats...)
	owners := waitLocked(t, rc, s.ID, seats...)
	time.Sleep(100 * time.Millisecond) // well inside the 3 s payment
	a.kill(t)
	killed := time.Now()

	if got := receive(t, pending, 10*time.Second); got.status != 0 {
		t.Errorf("the crashed instance's client got %v, want no answer (a transport error)", got)
	} else {
		t.Logf("client of the crashed instance: %v", got.err)
	}
	// The crash freed nothing: the locks are leases, and only their TTL
	// ends them.
	if pttl := rc.PTTL(context.Background(), lockKey(s.ID, "A3")).Val(); pttl <= 0 || pttl > ttl {
		t.Errorf("right after the crash A3's lock has PTTL %v, want a lease of at most %v", pttl, ttl)
	}
	m := seatMap(t, b.url, s.ID)
	for _, seat := range seats {
		if m[seat].Status != "free" {
			t.Errorf("after the crash seat %s is %+v, want free (never half-booked)", seat, m[seat])
		}
	}

	// Another instance books the same seats: it waits for the dead
	// holder's leases to run out, then takes over.
	taken := make(chan time.Time, 1)
	go func() {
		// Owned by this test: it ends once the key changes hands or the
		// deadline passes, and the test receives from taken below.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			v, err := rc.Get(context.Background(), lockKey(s.ID, "A2")).Result()
			if err == nil && owner(v) != owners["A2"] {
				taken <- time.Now()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		taken <- time.Time{}
	}()
	won := book(context.Background(), b.url, s.ID, "survivor", seats...)
	if won.status != http.StatusCreated {
		t.Fatalf("the other instance got %v, want 201", won)
	}
	at := <-taken
	if at.IsZero() {
		t.Fatal("the other instance's lock on A2 was never seen")
	}
	stuck := at.Sub(killed)
	t.Logf("seats stuck %v after the crash (TTL %v); the second booking took %v including a 3s payment", stuck.Round(time.Millisecond), ttl, won.latency().Round(time.Millisecond))
	if stuck > ttl+time.Second {
		t.Errorf("the seats were stuck %v after the crash, longer than the TTL %v plus 1s of slack", stuck, ttl)
	}
	m = seatMap(t, b.url, s.ID)
	for id, st := range m {
		want := ""
		if id == "A2" || id == "A3" || id == "A4" {
			want = won.booking.ID
		}
		if st.BookingID != want {
			t.Errorf("seat %s held by %q, want %q", id, st.BookingID, want)
		}
	}
}

// TestLostLock deletes one seat lock of a three-seat booking while the
// booking is in its payment: the watchdog's next renewal finds the key
// gone, closes Lost, and the booking aborts before it writes.
func TestLostLock(t *testing.T) {
	faultTest(t)
	const ttl = time.Second // renewals every 333ms
	redisURL := testenv.RedisURL(t)
	inst := startAPI(t, map[string]string{
		"REDIS_URL":    redisURL,
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     ttl.String(),
	})
	rc := testenv.RedisClient(t, redisURL)

	for _, lock := range []string{"redis", "keyed+redis"} {
		t.Run(lock, func(t *testing.T) {
			s := createScreening(t, inst.url, `{"movie":"Lost","rows":1,"seats_per_row":4,"payment_delay_ms":2000,"lock":"`+lock+`"}`)
			pending := bookAsync(inst.url, s.ID, "unlucky", "A1", "A2", "A3")
			waitLocked(t, rc, s.ID, "A1", "A2", "A3")
			if n := rc.Del(context.Background(), lockKey(s.ID, "A2")).Val(); n != 1 {
				t.Fatalf("DEL of A2's lock removed %d keys, want 1", n)
			}
			deleted := time.Now()
			got := receive(t, pending, 10*time.Second)
			if got.status != http.StatusConflict || got.code != "lock_lost" {
				t.Fatalf("booking got %v, want 409 lock_lost", got)
			}
			t.Logf("aborted %v after the key was deleted (renewal every %v), %v before the payment would have ended",
				got.done.Sub(deleted).Round(time.Millisecond), ttl/3, (2*time.Second - got.latency()).Round(time.Millisecond))
			if got.done.Sub(got.sent) >= 2*time.Second {
				t.Errorf("the booking answered after %v, not before its 2s payment ended", got.latency())
			}
			for id, st := range seatMap(t, inst.url, s.ID) {
				if st.Status != "free" {
					t.Errorf("seat %s is %+v, want free: nothing may be written after a lost lock", id, st)
				}
			}
			// The other locks were released, not left to expire.
			for _, seat := range []string{"A1", "A3"} {
				if err := rc.Get(context.Background(), lockKey(s.ID, seat)).Err(); !errors.Is(err, redis.Nil) {
					t.Errorf("lock of %s after the abort: %v, want none (released)", seat, err)
				}
			}
		})
	}
}
