package redisevents_test

import (
	"context"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/redisevents"
	"github.com/seatlock/seatlock/reservation"
)

// inbox is a Deliverer that keeps the events of one screening. The Redis
// server is shared with other tests, whose events arrive too.
type inbox struct {
	screeningID string
	events      chan reservation.Event
}

func newInbox(screeningID string) *inbox {
	return &inbox{screeningID: screeningID, events: make(chan reservation.Event, 4096)}
}

func (in *inbox) Deliver(e reservation.Event) {
	if e.ScreeningID == in.screeningID {
		in.events <- e
	}
}

// next returns the next event, failing t after d.
func (in *inbox) next(t *testing.T, d time.Duration) reservation.Event {
	t.Helper()
	select {
	case e := <-in.events:
		return e
	case <-time.After(d):
		t.Fatalf("no event of screening %s within %v", in.screeningID, d)
		return reservation.Event{}
	}
}

// client returns a client of the test Redis, closed when t ends.
func client(t *testing.T) *redis.Client {
	t.Helper()
	return testenv.RedisClient(t, testenv.RedisURL(t))
}

// start starts a bus on its own client and closes it when t ends, before
// the client.
func start(t *testing.T, to redisevents.Deliverer) *redisevents.Bus {
	t.Helper()
	return startIn(t, "", to)
}

// startIn is start with a namespace.
func startIn(t *testing.T, namespace string, to redisevents.Deliverer) *redisevents.Bus {
	t.Helper()
	c := client(t)
	b := redisevents.Start(t.Context(), c, to, redisevents.Options{Namespace: namespace})
	t.Cleanup(b.Close)
	return b
}

func event(screeningID string, n int) reservation.Event {
	return reservation.Event{
		Kind:        reservation.EventBooked,
		ScreeningID: screeningID,
		BookingID:   uuid.NewString(),
		Seats:       []string{"A1", reservation.SeatID(1, n+1)},
		At:          time.Date(2026, 1, 2, 3, 4, 5, n, time.UTC),
	}
}

// TestEveryInstanceReceives publishes on one bus and sees the event,
// unchanged, on that bus and on another, as two API instances do.
func TestEveryInstanceReceives(t *testing.T) {
	id := uuid.NewString()
	inA, inB := newInbox(id), newInbox(id)
	a, _ := start(t, inA), start(t, inB)

	want := event(id, 7)
	a.Publish(t.Context(), want)
	for name, in := range map[string]*inbox{"publisher": inA, "other": inB} {
		if got := in.next(t, 5*time.Second); !reflect.DeepEqual(got, want) {
			t.Errorf("%s received %+v, want %+v", name, got, want)
		}
	}
}

// TestNamespacesDoNotMeet: two deployments on one Redis, in namespaces of
// their own, never see each other's events, for the same screening id,
// whether a bus subscribes to a screening's channel (a Watcher, as the API
// does) or to every channel of its namespace; and a namespace with a
// character that is special in a Redis pattern matches only itself.
func TestNamespacesDoNotMeet(t *testing.T) {
	id := uuid.NewString()
	mine, theirs := "t-"+uuid.NewString()[:8], "t-"+uuid.NewString()[:8]
	for _, tc := range []struct{ name, mine, theirs string }{
		{"two namespaces", mine, theirs},
		{"a pattern character", mine + "x", mine + "*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Theirs listens both ways; a bus of mine publishes, another of
			// mine receives.
			watcher := &watchingInbox{inbox: newInbox(id)}
			everyChannel := newInbox(id)
			w := startIn(t, tc.theirs, watcher)
			if err := w.Follow(t.Context(), id); err != nil {
				t.Fatal(err)
			}
			startIn(t, tc.theirs, everyChannel)
			pub, sameDeployment := startIn(t, tc.mine, newInbox("")), newInbox(id)
			startIn(t, tc.mine, sameDeployment)

			ours := event(id, 1)
			pub.Publish(t.Context(), ours)
			if got := sameDeployment.next(t, 5*time.Second); !reflect.DeepEqual(got, ours) {
				t.Fatalf("the same namespace received %+v, want %+v", got, ours)
			}
			// Published after ours had arrived: a subscriber of the other
			// namespace that had received ours would have it first.
			want := event(id, 2)
			startIn(t, tc.theirs, newInbox("")).Publish(t.Context(), want)
			for name, in := range map[string]*inbox{"watching the screening": watcher.inbox, "subscribed to every channel": everyChannel} {
				if got := in.next(t, 5*time.Second); !reflect.DeepEqual(got, want) {
					t.Errorf("the other namespace, %s, received %+v first, want only its own %+v", name, got, want)
				}
			}
		})
	}
}

// watchingInbox is an inbox that watches only its screening, and counts
// every event the bus hands it, whatever its screening.
type watchingInbox struct {
	*inbox
	delivered atomic.Int64
}

func (in *watchingInbox) Watches(screeningID string) bool { return screeningID == in.screeningID }

func (in *watchingInbox) Deliver(e reservation.Event) {
	in.delivered.Add(1)
	in.inbox.Deliver(e)
}

// TestUnwatchedNotDelivered: a Watcher is handed only the events of the
// screenings it watches; the others are dropped before they are decoded,
// even on a channel the bus follows.
func TestUnwatchedNotDelivered(t *testing.T) {
	watched, other := uuid.NewString(), uuid.NewString()
	in := &watchingInbox{inbox: newInbox(watched)}
	b := start(t, in)
	for _, id := range []string{watched, other} {
		if err := b.Follow(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		b.Publish(t.Context(), event(other, i))
	}
	want := event(watched, 9)
	b.Publish(t.Context(), want)
	// One bus publishes in order on one connection, so the watched event
	// arrives after the three others.
	if got := in.next(t, 5*time.Second); !reflect.DeepEqual(got, want) {
		t.Fatalf("received %+v, want %+v", got, want)
	}
	if n := in.delivered.Load(); n != 1 {
		t.Errorf("the bus handed %d events to a watcher of one screening, want 1: the unwatched ones reached it", n)
	}
}

// everything is a Watcher that watches every screening and keeps every
// event the bus hands it.
type everything struct{ events chan reservation.Event }

func (everything) Watches(string) bool            { return true }
func (e everything) Deliver(ev reservation.Event) { e.events <- ev }

// TestOnlyFollowedReceived: a Watcher's bus receives the events of the
// screenings it follows, and no other: an instance with no page open is
// not sent its neighbours' bookings. Follow returns once the subscription
// is in place, so an event published by another instance right after it is
// received.
func TestOnlyFollowedReceived(t *testing.T) {
	in := everything{make(chan reservation.Event, 4096)}
	b := start(t, in)
	pub := start(t, newInbox(""))
	other := uuid.NewString()
	for round := range 20 {
		id := uuid.NewString()
		if err := b.Follow(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			pub.Publish(t.Context(), event(other, i))
		}
		want := event(id, round)
		pub.Publish(t.Context(), want)
		// One bus publishes in order on one connection: an event of the
		// screening not followed would arrive first.
		select {
		case got := <-in.events:
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: received %+v, want %+v", round, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the event published right after Follow never came", round)
		}
	}
}

// TestFollowOnEverySubscription: a bus subscribed to every screening
// (its Deliverer is not a Watcher) gets nothing more from Follow; in
// particular not each event twice, once for the pattern and once for the
// channel.
func TestFollowOnEverySubscription(t *testing.T) {
	id := uuid.NewString()
	in := newInbox(id)
	b := start(t, in)
	if err := b.Follow(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	want := event(id, 1)
	b.Publish(t.Context(), want)
	if got := in.next(t, 5*time.Second); !reflect.DeepEqual(got, want) {
		t.Fatalf("received %+v, want %+v", got, want)
	}
	select {
	case again := <-in.events:
		t.Errorf("the event came again: %+v", again)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestFollowWaitsForRedis: Follow does not return nil before Redis has
// confirmed the subscription; with a Redis that never answers, it returns
// an error once its context ends.
func TestFollowWaitsForRedis(t *testing.T) {
	addr, _ := silentServer(t)
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialerRetries: 1,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond,
	})
	t.Cleanup(func() { c.Close() })
	b := redisevents.Start(t.Context(), c, everything{make(chan reservation.Event, 1)}, redisevents.Options{})
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := b.Follow(ctx, uuid.NewString()); err == nil {
		t.Error("Follow returned nil with a Redis that never confirmed the subscription")
	}
}

// TestMalformedIgnored: a message that does not decode, or that names
// another screening than its channel, is not delivered; the next good one
// is.
func TestMalformedIgnored(t *testing.T) {
	id := uuid.NewString()
	in := newInbox(id)
	start(t, in)

	c := client(t)
	other := `{"kind":"booked","screening_id":"` + uuid.NewString() + `","booking_id":"x","seats":["A1"]}`
	for _, payload := range []string{"not json", other} {
		if err := c.Publish(t.Context(), redisevents.ChannelPrefix+id, payload).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Its own screening, on the wrong channel: not delivered either.
	misplaced := `{"kind":"booked","screening_id":"` + id + `","booking_id":"x","seats":["A1"]}`
	if err := c.Publish(t.Context(), redisevents.ChannelPrefix+uuid.NewString(), misplaced).Err(); err != nil {
		t.Fatal(err)
	}
	good := `{"kind":"cancelled","screening_id":"` + id + `","booking_id":"y","seats":["B2"]}`
	if err := c.Publish(t.Context(), redisevents.ChannelPrefix+id, good).Err(); err != nil {
		t.Fatal(err)
	}
	if got := in.next(t, 5*time.Second); got.BookingID != "y" || got.Kind != reservation.EventCancelled {
		t.Errorf("first event delivered: %+v, want the cancellation of booking y", got)
	}
}

// TestCloseSendsWhatIsQueued: the events queued when Close is called (the
// bookings of the last requests drained at shutdown) still reach the other
// instances, all of them and in order.
func TestCloseSendsWhatIsQueued(t *testing.T) {
	id := uuid.NewString()
	in := newInbox(id)
	start(t, in)

	const n = 1000 // within the queue, so none is dropped
	pub := redisevents.Start(t.Context(), client(t), newInbox(""), redisevents.Options{})
	for i := range n {
		pub.Publish(t.Context(), event(id, i))
	}
	pub.Close()
	for i := range n {
		if got := in.next(t, 5*time.Second); got.At.Nanosecond() != i {
			t.Fatalf("event %d of %d: got the one published as %d", i, n, got.At.Nanosecond())
		}
	}
}

// TestPublishNeverWaits: with a Redis that accepts connections and never
// answers, and a client that waits for it without end, Publish still
// returns; what does not fit in the queue is dropped, so a booking is never
// slowed by the seat map. A Publish that waited for Redis at all would
// wait forever here: the deadline is for that hang, not a speed test.
func TestPublishNeverWaits(t *testing.T) {
	addr, hangUp := silentServer(t)
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialerRetries: 1,
		ReadTimeout: -1, WriteTimeout: -1, // wait for Redis without end
	})
	t.Cleanup(func() { c.Close() })
	// A Watcher that follows nothing: Start subscribes to nothing, so it
	// does not wait for Redis.
	b := redisevents.Start(t.Context(), c, everything{}, redisevents.Options{})

	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range 5000 {
			b.Publish(t.Context(), event("down", i))
		}
	}()
	wait.Recv(t, published, 30*time.Second, "5000 events published to a Redis that never answers")
	hangUp()  // the stuck batch fails, and the next ones at once
	b.Close() // sends what is queued
}

// silentServer listens on a loopback port, accepts connections and never
// answers on them, until hangUp or the end of t closes them all and the
// port.
func silentServer(t *testing.T) (addr string, hangUp func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn // read and written only by the accept loop until it ends
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	var once sync.Once
	hangUp = func() {
		once.Do(func() {
			ln.Close()
			<-done
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(hangUp)
	return ln.Addr().String(), hangUp
}
