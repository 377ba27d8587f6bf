package redisqueue_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/embeddedredis"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/redisqueue"
)

// instance is one API instance's queue: a client of its own on the shared
// Redis.
func instance(t *testing.T, url string) *redisqueue.Queue {
	t.Helper()
	q, err := redisqueue.New(testenv.RedisClient(t, url), redisqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// line is the entries that joined one screening's queue, in the order
// they joined.
type line struct {
	screening string
	ids       []string
}

// join puts n entries in a fresh screening's queue, each through the next
// of the instances in turn.
func join(t *testing.T, cfg reservation.QueueConfig, n int, qs ...*redisqueue.Queue) line {
	t.Helper()
	l := line{screening: "q-" + uuid.NewString()}
	for i := range n {
		e := reservation.QueueEntry{ID: uuid.NewString(), ScreeningID: l.screening, Customer: fmt.Sprintf("buyer %d", i)}
		hash := sha256.Sum256([]byte(e.ID))
		got, err := qs[i%len(qs)].Join(t.Context(), cfg, e, hash[:])
		if err != nil {
			t.Fatalf("join %d: %v", i, err)
		}
		if got.ID != e.ID || got.Customer != e.Customer {
			t.Fatalf("join %d answered %+v", i, got)
		}
		l.ids = append(l.ids, e.ID)
	}
	return l
}

// look asks about every entry of the line, each through the next
// instance, the last to join first: then an entry seen admitted proves
// that those seen after it, who joined before it, had been admitted when
// they were seen.
func (l line) look(t *testing.T, qs ...*redisqueue.Queue) []reservation.QueueEntry {
	t.Helper()
	out := make([]reservation.QueueEntry, len(l.ids))
	for i := len(l.ids) - 1; i >= 0; i-- {
		e, _, err := qs[i%len(qs)].Entry(t.Context(), l.ids[i])
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		out[i] = e
	}
	return out
}

func queueConfig(rate int, admittedFor, leaveAfter time.Duration) reservation.QueueConfig {
	return reservation.QueueConfig{AdmitPerSecond: rate, AdmittedFor: admittedFor, LeaveAfter: leaveAfter}
}

// TestFirstComeFirstServedAcrossInstances joins buyers through two
// instances in turn, and asks about them through both: at every look, the
// admitted ones are exactly the first ones to join, and the others wait at
// their places in the line.
func TestFirstComeFirstServedAcrossInstances(t *testing.T) {
	url := testenv.RedisURL(t)
	a, b := instance(t, url), instance(t, url)
	l := join(t, queueConfig(20, time.Minute, time.Minute), 12, a, b)
	wait.For(t, 30*time.Second, "every entry admitted", func() bool {
		// Asked through the other instance first, so that the asking
		// order cannot explain the admission order.
		return inOrder(t, l.look(t, b, a))
	})
}

// inOrder fails t unless the admitted entries of a look are the first
// ones to join, and the others wait in the order they joined; it reports
// whether all are admitted.
func inOrder(t *testing.T, entries []reservation.QueueEntry) bool {
	t.Helper()
	admitted, last := 0, 0
	for i, e := range entries {
		switch {
		case e.Admitted && admitted != i:
			t.Fatalf("entry %d is admitted while entry %d, which joined earlier, waits at position %d", i, admitted, entries[admitted].Position)
		case e.Admitted:
			admitted++
		case e.Position <= last:
			t.Fatalf("entry %d waits at position %d, not behind the entry before it (%d)", i, e.Position, last)
		default:
			last = e.Position
		}
	}
	return admitted == len(entries)
}

// TestPace joins more buyers than the pace admits at once and checks that
// the n-th admission came no sooner than n / admit_per_s after the first,
// by Redis's clock. Load can only make admissions later.
func TestPace(t *testing.T) {
	url := testenv.RedisURL(t)
	a, b := instance(t, url), instance(t, url)
	const rate, admittedFor = 4, time.Minute
	l := join(t, queueConfig(rate, admittedFor, time.Minute), 9, a, b)
	var entries []reservation.QueueEntry
	wait.For(t, 30*time.Second, "every entry admitted", func() bool {
		entries = l.look(t, a, b)
		for _, e := range entries {
			if !e.Admitted {
				return false
			}
		}
		return true
	})
	first := entries[0].AdmittedUntil
	for i, e := range entries {
		want := time.Duration(i) * time.Second / rate
		if got := e.AdmittedUntil.Sub(first); got < want {
			t.Errorf("admission %d came %v after the first, want at least %v at %d a second", i, got, want, rate)
		}
	}
}

// TestAdmissionExpires: an admission lasts admitted_for, then the entry
// says it is over, by the queue's clock.
func TestAdmissionExpires(t *testing.T) {
	q := instance(t, testenv.RedisURL(t))
	l := join(t, queueConfig(10, time.Second, time.Minute), 1, q)
	e := l.look(t, q)[0]
	if !e.Admitted || e.Expired {
		t.Fatalf("the only entry of an idle queue: %+v, want admitted at once and not expired", e)
	}
	wait.For(t, 20*time.Second, "the admission of 1s expired", func() bool { return l.look(t, q)[0].Expired })
}

// TestUnaskedEntriesLeave: an entry nobody asks about for LeaveAfter
// leaves the line, and the entry behind it moves up; an entry asked about
// stays.
func TestUnaskedEntriesLeave(t *testing.T) {
	q := instance(t, testenv.RedisURL(t))
	// At 1 a second, the first is admitted at once and the two others wait.
	l := join(t, queueConfig(1, time.Minute, 300*time.Millisecond), 3, q)
	last := line{screening: l.screening, ids: l.ids[2:]}
	wait.For(t, 20*time.Second, "the unasked second entry left and the third moved up", func() bool {
		return last.look(t, q)[0].Position == 1 || last.look(t, q)[0].Admitted
	})
	_, _, err := q.Entry(t.Context(), l.ids[1])
	if !errors.Is(err, reservation.ErrNotFound) {
		t.Fatalf("the entry nobody asked about: %v, want ErrNotFound", err)
	}
	if e, _, err := q.Entry(t.Context(), l.ids[2]); err != nil {
		t.Fatalf("the entry asked about all along: %+v, %v; want it still there", e, err)
	}
}

// TestByToken finds an entry by the hash of its token, on its screening
// only.
func TestByToken(t *testing.T) {
	q := instance(t, testenv.RedisURL(t))
	l := join(t, queueConfig(1, time.Minute, time.Minute), 2, q)
	hash := sha256.Sum256([]byte(l.ids[1]))
	e, err := q.EntryByToken(t.Context(), l.screening, hash[:])
	if err != nil || e.ID != l.ids[1] || e.Position != 1 {
		t.Fatalf("by token: %+v, %v; want the second entry at position 1", e, err)
	}
	if _, err := q.EntryByToken(t.Context(), "q-"+uuid.NewString(), hash[:]); !errors.Is(err, reservation.ErrNotFound) {
		t.Fatalf("the token on another screening: %v, want ErrNotFound", err)
	}
}

// TestEmbeddedRedis runs the scripts on the embedded Redis, which is what
// the API uses without REDIS_URL.
func TestEmbeddedRedis(t *testing.T) {
	srv, err := embeddedredis.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	url := "redis://" + srv.Addr()
	a, b := instance(t, url), instance(t, url)
	l := join(t, queueConfig(4, time.Minute, time.Minute), 6, a, b)
	wait.For(t, 20*time.Second, "every entry admitted", func() bool { return inOrder(t, l.look(t, b, a)) })
}

// TestStats: a queue's figures count every entry once, waiting or
// admitted, whichever instance asks; a queue nobody joined is zeros and
// leaves no key behind.
func TestStats(t *testing.T) {
	url := testenv.RedisURL(t)
	a, b := instance(t, url), instance(t, url)
	cfg := queueConfig(1000, time.Minute, time.Minute)

	none := "q-" + uuid.NewString()
	if st, err := a.Stats(t.Context(), cfg, none); err != nil || st != (reservation.QueueStats{AdmitPerSecond: 1000}) {
		t.Fatalf("queue nobody joined: %+v %v, want zeros at 1000 a second", st, err)
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	if n, err := client.Keys(t.Context(), "seatlock:queue:{"+none+"}*").Result(); err != nil || len(n) != 0 {
		t.Fatalf("keys of a queue nobody joined: %v %v, want none", n, err)
	}

	const n = 5
	l := join(t, cfg, n, a, b)
	wait.For(t, 10*time.Second, "every entry admitted in the figures", func() bool {
		st, err := b.Stats(t.Context(), cfg, l.screening)
		if err != nil || st.Waiting+st.Admitted != n || st.AdmitPerSecond != 1000 {
			t.Fatalf("stats %+v %v, want %d entries counted once at 1000 a second", st, err, n)
		}
		return st.Admitted == n
	})
}
