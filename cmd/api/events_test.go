package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
)

// sse is an open event stream: lines arrive on lines until the test ends.
type sse struct {
	lines <-chan string
}

// openEvents connects to a screening's event stream on an instance and
// waits for its snapshot.
func openEvents(t *testing.T, base, screeningID string) *sse {
	t.Helper()
	s := &sse{lines: testenv.EventStream(t, base+"/v1/screenings/"+screeningID+"/events")}
	s.await(t, "event: snapshot", 5*time.Second)
	return s
}

// await returns the first line that starts with prefix, failing the test
// if none arrives within d or the stream ends.
func (s *sse) await(t *testing.T, prefix string, d time.Duration) string {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				t.Fatalf("stream ended before %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("no %q within %v", prefix, d)
		}
	}
}

// TestEventsAcrossInstances books on instance A and sees the booking on a
// stream of instance B, through the real Redis both share.
func TestEventsAcrossInstances(t *testing.T) {
	insts := startCluster(t, 2)
	a, b := insts[0], insts[1]
	s := createScreening(t, a.url, `{"movie":"Two rooms","rows":2,"seats_per_row":4}`)
	stream := openEvents(t, b.url, s.ID)

	r := call(t, "POST", a.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("ann", "B3"))
	if r.status != http.StatusCreated {
		t.Fatalf("booking on A: %d %s", r.status, r.body)
	}
	bk := decode[booking](t, r)
	stream.await(t, "event: booked", 10*time.Second)
	if data := stream.await(t, "data: ", 10*time.Second); !strings.Contains(data, bk.ID) || !strings.Contains(data, `"B3"`) {
		t.Errorf("B's event %s, want booking %s of B3", data, bk.ID)
	}

	// A cancellation on B reaches a stream of A the same way.
	back := openEvents(t, a.url, s.ID)
	if r := call(t, "DELETE", b.url+"/v1/bookings/"+bk.ID, "", "Authorization", "Bearer "+bk.Token); r.status != http.StatusNoContent {
		t.Fatalf("cancel on B: %d %s", r.status, r.body)
	}
	back.await(t, "event: cancelled", 10*time.Second)
}

// TestDeploymentsOnOneRedisDoNotMeet: two deployments on one Redis, each
// with a screening "demo", never see each other's bookings on their maps,
// while the instances of one deployment see each other's, even when they
// name their database differently (localhost, 127.0.0.1).
func TestDeploymentsOnOneRedisDoNotMeet(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		redisURL := testenv.RedisURL(t)
		db := testenv.NewDatabase(t)
		a1 := startAPI(t, map[string]string{"REDIS_URL": redisURL, "DATABASE_URL": db})
		a2 := startAPI(t, map[string]string{"REDIS_URL": redisURL, "DATABASE_URL": strings.Replace(db, "127.0.0.1", "localhost", 1)})
		b := startAPI(t, map[string]string{"REDIS_URL": redisURL, "DATABASE_URL": testenv.NewDatabase(t)})
		neverMeet(t, a1, a2, b)
	})
	t.Run("in memory", func(t *testing.T) {
		redisURL, _ := startRedis(t)
		a := startAPI(t, map[string]string{"REDIS_URL": redisURL})
		b := startAPI(t, map[string]string{"REDIS_URL": redisURL})
		neverMeet(t, a, nil, b)
	})
}

// neverMeet books the demo screening on a1 and then on b, with streams open
// on a2 (another instance of a1's deployment, if not nil) and on b: a2 sees
// a1's booking, and b sees only its own. b's booking is made after a1's
// reached a2, so a leak of a1's to b would come first.
func neverMeet(t *testing.T, a1, a2, b *instance) {
	t.Helper()
	seen := openEvents(t, a1.url, "demo")
	if a2 != nil {
		seen = openEvents(t, a2.url, "demo")
	}
	other := openEvents(t, b.url, "demo")
	ours := decode[booking](t, call(t, "POST", a1.url+"/v1/screenings/demo/bookings", bookingBody("ann", "B3")))
	seen.await(t, "event: booked", 5*time.Second)
	if data := seen.await(t, "data: ", time.Second); !strings.Contains(data, ours.ID) {
		t.Fatalf("the same deployment saw %s, want booking %s", data, ours.ID)
	}
	theirs := decode[booking](t, call(t, "POST", b.url+"/v1/screenings/demo/bookings", bookingBody("bob", "B4")))
	other.await(t, "event: booked", 5*time.Second)
	if data := other.await(t, "data: ", time.Second); !strings.Contains(data, theirs.ID) {
		t.Errorf("the other deployment's map got %s first, want only its own booking %s", data, theirs.ID)
	}
}

// TestShutdownEndsStreams stops an instance while a page is connected: the
// stream ends and run returns without an error. Had it waited for the page,
// which never leaves, its drain would have run out and run returned the
// shutdown's deadline error.
func TestShutdownEndsStreams(t *testing.T) {
	api := startAPI(t, nil)
	stream := openEvents(t, api.url, "demo")
	if err := api.stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for range stream.lines { // ends only when the server ended the stream
		}
	}()
	wait.Recv(t, ended, 10*time.Second, "the stream ends with the server")
}

// TestLockMetrics books once and finds the lock histograms of the
// screening's strategy, and the status on the request duration.
func TestLockMetrics(t *testing.T) {
	api := startAPI(t, nil)
	s := createScreening(t, api.url, `{"movie":"Measured","rows":1,"seats_per_row":2,"lock":"keyed"}`)
	if r := call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("ann", "A1")); r.status != http.StatusCreated {
		t.Fatalf("booking: %d %s", r.status, r.body)
	}
	r := call(t, "GET", api.url+"/metrics", "")
	for _, want := range []string{
		`seatlock_lock_wait_seconds_bucket{layer="keyed",outcome="acquired",le="1e-06"}`,
		`seatlock_lock_hold_seconds_count{layer="keyed"} 1`,
		`seatlock_bookings_total{outcome="confirmed",strategy="keyed"} 1`,
		`http_request_duration_seconds_count{route="/v1/screenings/:id/bookings",status="201"} 1`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
