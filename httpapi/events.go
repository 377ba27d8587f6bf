package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seatlock/seatlock/reservation"
)

// Hub fans booking events out to the live streams (GET
// /v1/screenings/{id}/events) open on this instance. Whatever feeds it
// (cmd/api's redisevents.Bus) calls Deliver for every event of the
// screenings it follows: a stream asks its Feed to follow its screening
// before it reads its snapshot, so an instance on which no page was ever
// opened is fed nothing.
//
// Deliver never waits for a stream: each stream has a bounded buffer, and
// a stream that falls behind by a whole buffer is closed. Its page
// reconnects and starts again from a fresh snapshot, which is cheaper and
// more honest than a booking waiting for a slow browser.
type Hub struct {
	buffer int

	// mu guards streams and closed. A stream is in streams exactly while
	// its channel is open: whoever takes it out (unsubscribe, a Deliver
	// that finds it full, or Close) closes its channel, under mu, so a
	// channel is closed once and never sent on after.
	mu      sync.Mutex
	streams map[string]map[*stream]struct{} // by screening id
	closed  bool
	feed    Feed // set once, before the server serves; guarded by mu all the same
}

// Feed brings a hub the events of the screenings it follows.
// redisevents.Bus is one.
type Feed interface {
	// Follow returns once every event of the screening published after
	// it returns will be delivered to the hub; it returns an error when
	// that cannot be made sure of in time (the stream then opens all the
	// same, and may miss events until the feed is back).
	Follow(ctx context.Context, screeningID string) error
}

// SetFeed makes the hub's streams follow their screenings on f. Without a
// feed, streams assume that every event is delivered to the hub anyway.
func (h *Hub) SetFeed(f Feed) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.feed = f
}

// follow asks the feed, if any, to follow a screening; see Feed.
func (h *Hub) follow(ctx context.Context, screeningID string) error {
	h.mu.Lock()
	f := h.feed
	h.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Follow(ctx, screeningID)
}

// stream is one open event stream: its handler reads events, each already
// formatted as a Server-Sent Event.
type stream struct {
	screeningID string
	events      chan string
}

// NewHub returns a hub whose streams buffer up to buffer events each (zero
// means 256).
func NewHub(buffer int) *Hub {
	if buffer <= 0 {
		buffer = 256
	}
	return &Hub{buffer: buffer, streams: map[string]map[*stream]struct{}{}}
}

// Deliver hands e to every stream of its screening, without waiting: a
// stream whose buffer is full is closed instead, so that its page starts
// again from a snapshot rather than miss a booking. A critical-section
// event (entered, left) is only skipped by a full stream: it draws the
// lock timeline, which the page can afford to miss. The event is
// formatted once, outside the lock, for all of them.
func (h *Hub) Deliver(e reservation.Event) {
	// Most events find no page open on their screening: they cost no
	// formatting. A stream that opens after this check starts from a
	// snapshot taken after it opened, which holds the event's booking.
	if !h.Watches(e.ScreeningID) {
		return
	}
	frame := sseEvent(string(e.Kind), toEventJSON(e))
	lossy := e.Kind == reservation.EventEntered || e.Kind == reservation.EventLeft
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.streams[e.ScreeningID] {
		select {
		case s.events <- frame:
		default:
			if !lossy {
				h.removeLocked(s)
			}
		}
	}
}

// Close ends every stream and refuses new ones. The server calls it before
// http.Server.Shutdown, which does not end streaming requests by itself.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, set := range h.streams {
		for s := range set {
			h.removeLocked(s)
		}
	}
}

// Watches reports whether a stream of the screening is open.
func (h *Hub) Watches(screeningID string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.streams[screeningID]) > 0
}

// Streams returns how many streams are open.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, set := range h.streams {
		n += len(set)
	}
	return n
}

// subscribe opens a stream of a screening's events; ok is false once the
// hub is closed.
func (h *Hub) subscribe(screeningID string) (s *stream, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	s = &stream{screeningID: screeningID, events: make(chan string, h.buffer)}
	if h.streams[screeningID] == nil {
		h.streams[screeningID] = map[*stream]struct{}{}
	}
	h.streams[screeningID][s] = struct{}{}
	return s, true
}

// unsubscribe closes s unless the hub already has.
func (h *Hub) unsubscribe(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.streams[s.screeningID][s]; ok {
		h.removeLocked(s)
	}
}

// removeLocked takes s out of the hub and closes its channel; h.mu must be
// held and s must be in the hub.
func (h *Hub) removeLocked(s *stream) {
	set := h.streams[s.screeningID]
	delete(set, s)
	if len(set) == 0 {
		delete(h.streams, s.screeningID)
	}
	close(s.events)
}

// sseGather is how long a stream waits, after an event, for more events
// to write with it. A stream's buffer holds 256 events by default, so a
// screening may see about 10,000 events a second before a stream whose
// client keeps up is closed for falling behind; bookings arrive within a
// second either way.
const sseGather = 25 * time.Millisecond

// sseWriteTimeout bounds one write to a stream: a client that does not read
// for this long is dropped rather than holding its handler.
const sseWriteTimeout = 10 * time.Second

// handleEvents streams a screening's bookings and cancellations as
// Server-Sent Events. The first event, "snapshot", is the whole seat map;
// then every "booked" and "cancelled" event follows, and a comment every
// heartbeat keeps proxies from closing an idle connection. On a screening
// with a waiting room, the snapshot holds the queue's figures too, and a
// "queue" event follows whenever they change (see queueWatch). The stream is
// subscribed, and its screening followed on the hub's feed, before the
// snapshot is read, so nothing falls between the two; an event already in
// the snapshot is harmless when applied again.
//
// The stream ends when the client goes away, when it falls behind (see
// Hub) or when the hub closes at shutdown; the browser's EventSource then
// reconnects by itself and gets a fresh snapshot.
func handleEvents(svc *reservation.Service, hub *Hub, heartbeat, queuePoll time.Duration) gin.HandlerFunc {
	// Only a service in demo mode offers lock "none", and only one in demo
	// mode sends "entered" and "left" (see reservation.Options.Demo).
	demo := slices.Contains(svc.Strategies(), string(reservation.LockNone))
	return func(c *gin.Context) {
		if hub == nil {
			respondCode(c, http.StatusNotFound, codeNotFound, "live events are not enabled on this server")
			return
		}
		sc, ok := screeningOf(c, svc)
		if !ok {
			return
		}
		ctx := c.Request.Context()
		s, ok := hub.subscribe(sc.ID)
		if !ok {
			respondCode(c, http.StatusServiceUnavailable, codeUnavailable, "the server is shutting down")
			return
		}
		defer hub.unsubscribe(s)
		if err := hub.follow(ctx, sc.ID); err != nil && ctx.Err() != nil {
			return // the client went away
		}
		_, seats, err := svc.Seats(ctx, sc.ID)
		if err != nil {
			respondErr(c, err)
			return
		}
		snap := toSnapshotJSON(sc, seats, demo)
		watch := newQueueWatch(svc, sc, queuePoll)
		if watch != nil {
			snap.Queue = watch.first(ctx)
		}

		// The server's write timeout counts from the start of the request;
		// a stream instead gets a deadline per write (see send).
		h := c.Writer.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // tell nginx not to buffer
		c.Status(http.StatusOK)
		w := sseWriter{w: c.Writer, rc: http.NewResponseController(c.Writer)}
		// "retry" makes a browser reconnect after a second, not three.
		if !w.send([]byte("retry: 1000\n\n" + sseEvent("snapshot", snap))) {
			return
		}
		relay(ctx, w, s, heartbeat, watch)
	}
}

// sseWriter writes the chunks of one event stream.
type sseWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

// send writes one chunk and flushes it; false means the client is gone or
// too slow.
func (w sseWriter) send(chunk []byte) bool {
	_ = w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := w.w.Write(chunk); err != nil {
		return false
	}
	return w.rc.Flush() == nil
}

// relay writes the events of s to w, in bursts, with a heartbeat comment
// when idle and, with a watch, a "queue" event when the waiting room's
// figures change, until ctx ends, s closes or a write fails.
func relay(ctx context.Context, w sseWriter, s *stream, heartbeat time.Duration, watch *queueWatch) {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var poll <-chan time.Time // nil, never ready, without a waiting room
	if watch != nil {
		t := time.NewTicker(watch.every)
		defer t.Stop()
		poll = t.C
	}
	gather := time.NewTimer(sseGather)
	defer gather.Stop()
	var burst []byte // reused by every write of this stream
	for {
		select {
		case <-ctx.Done():
			return
		case frame, ok := <-s.events:
			if !ok {
				return
			}
			burst, ok = gatherBurst(ctx, gather, s, frame, burst[:0])
			if !ok || !w.send(burst) {
				return
			}
		case <-tick.C:
			if !w.send([]byte(": heartbeat\n\n")) {
				return
			}
		case <-poll:
			if frame, changed := watch.poll(ctx); changed && !w.send([]byte(frame)) {
				return
			}
		}
	}
}

// gatherBurst appends first and the events that follow it within sseGather
// to burst. Under load, letting them gather for a moment and writing them
// all with one flush (one system call, and one wake-up of this goroutine
// and of the reader, per burst instead of per event) is what lets many
// pages keep up without slowing the bookings. The page receives the same
// bytes, at most sseGather later. False means ctx ended.
func gatherBurst(ctx context.Context, gather *time.Timer, s *stream, first string, burst []byte) ([]byte, bool) {
	gather.Reset(sseGather)
	select {
	case <-ctx.Done():
		return burst, false
	case <-gather.C:
	}
	burst = append(burst, first...)
	for more := len(s.events); more > 0; more-- {
		frame, ok := <-s.events
		if !ok {
			break // closed: write what came before; the next receive ends the stream
		}
		burst = append(burst, frame...)
	}
	return burst, true
}

// sseEvent formats one Server-Sent Event whose data is v in JSON, which is
// one line: encoding/json escapes every newline inside strings.
func sseEvent(name string, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Only a programming error gets here: the shapes are plain.
		panic(fmt.Sprintf("httpapi: event %s: %v", name, err))
	}
	return "event: " + name + "\ndata: " + string(data) + "\n\n"
}

// limitStreams answers 503 unavailable, with Retry-After, once max streams
// (DefaultMaxStreams if max is 0) are open, and otherwise lets the stream
// run, counting it until its handler returns.
func limitStreams(max int) gin.HandlerFunc {
	if max <= 0 {
		max = DefaultMaxStreams
	}
	open := make(chan struct{}, max)
	return func(c *gin.Context) {
		select {
		case open <- struct{}{}:
		default:
			c.Header("Retry-After", "5")
			respondCode(c, http.StatusServiceUnavailable, codeUnavailable,
				"this instance has as many live streams open as it serves; try again later")
			return
		}
		defer func() { <-open }()
		c.Next()
	}
}

// queueWatch shows one stream the waiting room of its screening. The
// queue admits at its pace inside Redis, on whichever instance's call
// comes, so no instance knows when an admission happens; the stream asks
// the shared queue itself, every so often, and sends what changed. That
// is one small Redis call per open page and period, and it sees the joins
// and admissions of every instance, without an event per buyer on the
// bus.
type queueWatch struct {
	svc   *reservation.Service
	sc    reservation.Screening
	every time.Duration
	last  queueStatsJSON // the figures the page has now
}

// newQueueWatch returns the watch of a screening's stream, or nil when the
// screening has no waiting room.
func newQueueWatch(svc *reservation.Service, sc reservation.Screening, every time.Duration) *queueWatch {
	if !sc.Queue.Enabled() {
		return nil
	}
	return &queueWatch{svc: svc, sc: sc, every: every, last: queueStatsJSON{ScreeningID: sc.ID, AdmitPerSecond: sc.Queue.AdmitPerSecond}}
}

// first returns the figures for the snapshot. When the queue cannot be
// read, they are the pace alone: the seat map matters more than the
// figures, which the next poll brings.
func (q *queueWatch) first(ctx context.Context) *queueStatsJSON {
	q.poll(ctx)
	out := q.last
	return &out
}

// poll reads the queue and returns its "queue" event, with changed true
// when the figures differ from the last ones. A failed read changes
// nothing: the page keeps the figures it has.
func (q *queueWatch) poll(ctx context.Context) (frame string, changed bool) {
	st, err := q.svc.QueueStats(ctx, q.sc)
	if err != nil {
		return "", false
	}
	now := toQueueStatsJSON(q.sc.ID, st)
	if now == q.last {
		return "", false
	}
	q.last = now
	return sseEvent("queue", now), true
}
