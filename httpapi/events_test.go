package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

func TestHub(t *testing.T) {
	booked := func(screening string) reservation.Event {
		return reservation.Event{Kind: reservation.EventBooked, ScreeningID: screening, Seats: []string{"A1"}}
	}

	t.Run("delivers to the streams of the event's screening only", func(t *testing.T) {
		h := NewHub(4)
		a, _ := h.subscribe("s1")
		b, _ := h.subscribe("s2")
		h.Deliver(booked("s1"))
		if len(a.events) != 1 || len(b.events) != 0 {
			t.Errorf("s1 stream has %d events, s2 stream %d; want 1 and 0", len(a.events), len(b.events))
		}
	})

	t.Run("watches a screening while one of its streams is open", func(t *testing.T) {
		h := NewHub(4)
		if h.Watches("s1") {
			t.Error("watches s1 before any stream")
		}
		a, _ := h.subscribe("s1")
		b, _ := h.subscribe("s1")
		h.unsubscribe(a)
		if !h.Watches("s1") || h.Watches("s2") {
			t.Errorf("with one stream of s1 open: watches s1 %v, s2 %v; want true, false", h.Watches("s1"), h.Watches("s2"))
		}
		h.unsubscribe(b)
		if h.Watches("s1") {
			t.Error("watches s1 after its last stream closed")
		}
	})

	t.Run("closes a stream that falls behind instead of waiting", func(t *testing.T) {
		h := NewHub(2)
		slow, _ := h.subscribe("s1")
		fast, _ := h.subscribe("s1")
		for range 3 {
			h.Deliver(booked("s1")) // nobody reads slow: the third overflows it
			<-fast.events
		}
		n := 0
		for range slow.events { // ends only if the channel was closed
			n++
		}
		if n != 2 || h.Streams() != 1 {
			t.Errorf("slow stream got %d events before closing, %d streams left; want 2 and 1", n, h.Streams())
		}
		h.unsubscribe(slow) // a second close would panic
	})

	t.Run("a full stream only skips a critical-section event", func(t *testing.T) {
		h := NewHub(1)
		s, _ := h.subscribe("s1")
		section := reservation.Event{ScreeningID: "s1", Holder: "h1", Seats: []string{"A1"}}
		section.Kind = reservation.EventEntered
		h.Deliver(section)
		section.Kind = reservation.EventLeft
		h.Deliver(section) // the buffer is full: skipped, the stream stays
		if h.Streams() != 1 || len(s.events) != 1 {
			t.Fatalf("%d streams, %d events buffered after a skipped section event; want 1 and 1", h.Streams(), len(s.events))
		}
		h.Deliver(booked("s1")) // a booking is never skipped: the stream is closed
		if first := <-s.events; !strings.HasPrefix(first, "event: entered\n") {
			t.Errorf("first event %q, want entered", first)
		}
		if _, open := <-s.events; open || h.Streams() != 0 {
			t.Errorf("stream open %v, %d streams, after a booking overflowed it; want it closed", open, h.Streams())
		}
	})

	t.Run("close ends every stream and refuses new ones", func(t *testing.T) {
		h := NewHub(2)
		s, _ := h.subscribe("s1")
		h.Close()
		if _, open := <-s.events; open {
			t.Error("stream still open after Close")
		}
		if _, ok := h.subscribe("s1"); ok {
			t.Error("subscribe after Close succeeded")
		}
		h.unsubscribe(s)
	})
}

// readEvent is one event read from a stream; a comment (a heartbeat) is
// one named "comment".
type readEvent struct{ name, data string }

// next reads the next event from the lines of a stream
// (testenv.EventStream), within 5s; with
// skipComments, heartbeat comments are passed over.
func next(t *testing.T, lines <-chan string, skipComments bool) readEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	var e readEvent
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("stream ended")
			}
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			case strings.HasPrefix(line, ": ") && !skipComments:
				return readEvent{name: "comment"}
			case line == "" && e.name != "":
				return e
			}
		case <-timeout:
			t.Fatal("no event within 5s")
		}
	}
}

func TestEventStream(t *testing.T) {
	hub := NewHub(0)
	svc := reservation.NewService(memory.New(), reservation.Options{Demo: true, DefaultLock: reservation.LockNone, Events: hubPublisher{hub}})
	sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{ID: "s1", Movie: "M", Rows: 2, SeatsPerRow: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(NewServer(svc, Options{Events: hub, Heartbeat: 200 * time.Millisecond}))
	// Timeouts far shorter than the test: the stream must outlive them.
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Config.WriteTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close) // before srv.Close, which waits for the streams

	if res, err := http.Get(srv.URL + "/v1/screenings/nope/events"); err != nil || res.StatusCode != 404 {
		t.Fatalf("unknown screening: %v %v", res.StatusCode, err)
	}

	events := testenv.EventStream(t, srv.URL+"/v1/screenings/s1/events")
	snap := next(t, events, true)
	var s snapshotJSON
	if err := json.Unmarshal([]byte(snap.data), &s); snap.name != "snapshot" || err != nil || s.Screening.ID != "s1" || len(s.Seats) != 6 || !s.Demo {
		t.Fatalf("first event %s %s (%v), want a snapshot of 6 seats in demo mode", snap.name, snap.data, err)
	}
	if e := next(t, events, false); e.name != "comment" {
		t.Errorf("got %s, want a heartbeat comment", e.name)
	}
	time.Sleep(400 * time.Millisecond) // the time under test: the stream outlives the server's timeouts

	conf, err := svc.Book(context.Background(), reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B2"}, Customer: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	// The booking is told inside its critical section: entered, booked,
	// left.
	var holder string
	for i, want := range []string{"entered", "booked", "left"} {
		e := next(t, events, true)
		var ev eventJSON
		err := json.Unmarshal([]byte(e.data), &ev)
		if e.name != want || err != nil || len(ev.Seats) != 1 || ev.Seats[0] != "B2" {
			t.Fatalf("event %d: %s %s (%v), want %s B2", i, e.name, e.data, err, want)
		}
		switch {
		case want == "booked" && (ev.BookingID != conf.Booking.ID || ev.Holder != ""):
			t.Errorf("booked %s, want booking %s and no holder", e.data, conf.Booking.ID)
		case want == "entered":
			holder = ev.Holder
		}
		if want != "booked" && (ev.Holder == "" || ev.Holder != holder || strings.Contains(e.data, "booking_id")) {
			t.Errorf("%s %s, want holder %q and no booking id", want, e.data, holder)
		}
	}
	if err := svc.Cancel(context.Background(), conf.Booking.ID, conf.Token); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events, true); e.name != "cancelled" || !strings.Contains(e.data, conf.Booking.ID) {
		t.Fatalf("event %s %s, want cancelled", e.name, e.data)
	}

	hub.Close()
	timeout := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-events: // what is left, up to the end
		case <-timeout:
			t.Fatal("stream did not end within 5s of the hub closing")
		}
	}
}

// hubPublisher delivers a service's events straight to a hub, as one
// instance without Redis would.
type hubPublisher struct{ h *Hub }

func (p hubPublisher) Publish(_ context.Context, e reservation.Event) { p.h.Deliver(e) }

// TestStreamLimit checks that streams beyond Options.MaxStreams are
// answered 503 in JSON, and that a closed stream frees its place.
func TestStreamLimit(t *testing.T) {
	hub := NewHub(0)
	svc := reservation.NewService(memory.New(), reservation.Options{Demo: true, DefaultLock: reservation.LockNone, Events: hubPublisher{hub}})
	if _, err := svc.CreateScreening(context.Background(), reservation.NewScreening{ID: "s1", Movie: "M", Rows: 1, SeatsPerRow: 1}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(svc, Options{Events: hub, MaxStreams: 2}))
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close)
	url := srv.URL + "/v1/screenings/s1/events"

	next(t, testenv.EventStream(t, url), true)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	second, err := http.DefaultClient.Do(req)
	if err != nil || second.StatusCode != 200 {
		t.Fatalf("second stream: %v %v", second, err)
	}
	// A stream let through would never end: the timeout makes that a
	// failure rather than a hang.
	res, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("third stream: %v", err)
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(string(body), `"code":"unavailable"`) || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %s", res.StatusCode, body)
	}
	cancel()
	second.Body.Close()
	wait.For(t, 10*time.Second, "a closed stream frees its place", func() bool {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
}
