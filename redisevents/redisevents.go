// Package redisevents carries booking events between API instances over
// Redis pub/sub: it is the Redis adapter of reservation.EventPublisher, and
// it is named after what it adapts, as reservation/postgres is.
//
// The instance that wrote a booking publishes its event on the channel of
// its screening, "seatlock:events:<namespace>:<screening id>", and every
// instance hands what it receives to its Deliverer. Redis's channels are
// shared by every client of the server, whatever database number it
// uses, so the namespace (Options.Namespace) keeps the events of one
// deployment from another's on the same Redis: two deployments that both
// have a screening "demo" see each other's bookings on its map otherwise. A plain Deliverer is subscribed to the
// pattern of all such channels. A Watcher (in the API, the httpapi.Hub that
// feeds the live seat maps) is subscribed only to the channels of the
// screenings it follows (see Bus.Follow): an instance on which no page
// was ever opened receives no event at all, and one that stays subscribed
// to a screening after its pages closed drops its events before decoding
// them, so the cost of the live map does not grow with
// the bookings of every other instance:
//
//	hub := httpapi.NewHub(0)
//	bus := redisevents.Start(ctx, client, hub, redisevents.Options{Logger: logger, Namespace: "db0-1f2e3d4c5b6a"})
//	defer bus.Close() // after the HTTP server has shut down
//	hub.SetFeed(bus)  // a page's stream follows its screening on the bus
//	svc := reservation.NewService(store, reservation.Options{Events: bus})
//
// Pub/sub is fire-and-forget: an instance that is not connected misses
// events, which is why a page starts every stream with a snapshot. A booking
// never waits for Redis: Publish only queues (see Bus.Publish).
package redisevents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/reservation"
)

const (
	// ChannelPrefix starts the channel of every screening's events; the
	// namespace, if any, and the screening id follow.
	ChannelPrefix = "seatlock:events:"

	// publishQueue bounds the events waiting to be published; a booking
	// never waits for Redis to take its event (see Publish).
	publishQueue = 1024
	// publishBatch bounds the events sent in one round trip.
	publishBatch = 256
	// publishGather is how long the events that follow a first one may
	// gather before they are sent together. Without it, bookings that end
	// a little apart each cost a round trip to Redis of their own; a page
	// gathers its events for 25 ms anyway (httpapi's sseGather).
	publishGather = 2 * time.Millisecond
	// publishTimeout bounds one round trip.
	publishTimeout = 2 * time.Second
	// subscribeWait bounds the wait for a subscription: at start-up, and
	// in Follow.
	subscribeWait = 2 * time.Second
)

// Deliverer receives every event published by any instance, this one
// included. httpapi.Hub is one.
type Deliverer interface {
	Deliver(reservation.Event)
}

// Watcher is a Deliverer that can say whether anyone here wants a
// screening's events at all. The bus subscribes it to no screening until
// Follow is called for one, and drops unread, before decoding, the events
// of a screening it has stopped watching (it stays subscribed). httpapi.Hub
// is one: an instance on which no page was ever opened receives none of
// the events its neighbours' bookings send.
type Watcher interface {
	Deliverer
	Watches(screeningID string) bool
}

// Options configure a Bus. The zero value works.
type Options struct {
	// Logger receives warnings (events dropped or malformed, Redis
	// errors). Nil discards them.
	Logger *slog.Logger

	// Namespace is the deployment's part of the channel names: the buses
	// of one deployment (the instances that share a store) must have the
	// same, and other deployments on the same Redis another. Empty means
	// none: channels "seatlock:events:<screening id>".
	Namespace string
}

// channelPrefix is what starts the channel names of a namespace.
func channelPrefix(namespace string) string {
	if namespace == "" {
		return ChannelPrefix
	}
	return ChannelPrefix + namespace + ":"
}

// globEscape escapes the characters that are special in a Redis pattern
// (PSUBSCRIBE), so that a namespace matches only itself.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// message is an Event on the wire between instances.
type message struct {
	Kind        reservation.EventKind `json:"kind"`
	ScreeningID string                `json:"screening_id"`
	BookingID   string                `json:"booking_id"`
	HoldID      string                `json:"hold_id,omitempty"`
	Holder      string                `json:"holder,omitempty"`
	ExpiresAt   wireTime              `json:"expires_at,omitzero"`
	Seats       []string              `json:"seats"`
	At          wireTime              `json:"at"`
}

func toMessage(ev reservation.Event) message {
	return message{
		Kind:        ev.Kind,
		ScreeningID: ev.ScreeningID,
		BookingID:   ev.BookingID,
		HoldID:      ev.HoldID,
		Holder:      ev.Holder,
		ExpiresAt:   wireTime(ev.ExpiresAt),
		Seats:       ev.Seats,
		At:          wireTime(ev.At),
	}
}

func (m message) event() reservation.Event {
	return reservation.Event{
		Kind:        m.Kind,
		ScreeningID: m.ScreeningID,
		BookingID:   m.BookingID,
		HoldID:      m.HoldID,
		Holder:      m.Holder,
		ExpiresAt:   time.Time(m.ExpiresAt),
		Seats:       m.Seats,
		At:          time.Time(m.At),
	}
}

// wireTime is a time.Time on the wire, written and read exactly as
// encoding/json writes and reads a time.Time, but written through
// MarshalText instead of MarshalJSON: encoding/json scans and compacts
// the output of a MarshalJSON byte by byte, and takes that of a
// MarshalText as a string. Every booking's event carries one.
type wireTime time.Time

func (t wireTime) IsZero() bool                 { return time.Time(t).IsZero() }
func (t wireTime) MarshalText() ([]byte, error) { return time.Time(t).MarshalText() }

// UnmarshalJSON reads what time.Time reads (null included, which leaves
// the time as it was).
func (t *wireTime) UnmarshalJSON(b []byte) error { return (*time.Time)(t).UnmarshalJSON(b) }

// Bus publishes this instance's booking events to Redis and delivers
// everyone's to a Deliverer. It owns two goroutines, publish and receive;
// Close stops both and waits for them.
type Bus struct {
	client  *redis.Client
	deliver Deliverer
	logger  *slog.Logger
	prefix  string // of every channel of this bus: channelPrefix(Options.Namespace)

	queue  chan reservation.Event
	pubsub *redis.PubSub
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards followed: the channels Follow has subscribed to, each with
	// a channel that receive closes once Redis has confirmed the
	// subscription. A channel stays subscribed for the life of the bus
	// (go-redis subscribes again after a reconnection), so a confirmation
	// is never one of an earlier subscription to the same channel.
	mu       sync.Mutex
	followed map[string]chan struct{}
}

var _ reservation.EventPublisher = (*Bus)(nil)

// Start starts the bus. A Deliverer that is not a Watcher is subscribed to
// the event channels of every screening: Start waits up to two seconds for
// Redis to confirm it, so that it sees every event written after; when
// Redis does not answer, it starts anyway (the API must answer 503 rather
// than not start) and go-redis subscribes once Redis is back. A Watcher is
// subscribed to nothing yet (see Follow).
func Start(ctx context.Context, client *redis.Client, to Deliverer, opts Options) *Bus {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	prefix := channelPrefix(opts.Namespace)
	var pubsub *redis.PubSub
	if _, ok := to.(Watcher); ok {
		pubsub = client.Subscribe(ctx)
	} else {
		pubsub = client.PSubscribe(ctx, globEscape(prefix)+"*")
		wait, cancel := context.WithTimeout(ctx, subscribeWait)
		if _, err := pubsub.Receive(wait); err != nil {
			logger.Warn("live seat map: not subscribed to booking events yet; retrying in the background", "err", err)
		}
		cancel()
	}
	// The goroutines' context is not ctx: they live until Close, not
	// until the start-up context ends.
	runCtx, cancel := context.WithCancel(context.Background())
	b := &Bus{
		client:   client,
		deliver:  to,
		logger:   logger,
		prefix:   prefix,
		queue:    make(chan reservation.Event, publishQueue),
		pubsub:   pubsub,
		cancel:   cancel,
		followed: map[string]chan struct{}{},
	}
	b.wg.Go(func() { b.publish(runCtx) })
	b.wg.Go(b.receive)
	return b
}

// Publish queues an event for Redis without waiting. When the queue is full
// (Redis is down or slow) the event is dropped with a warning: pages then
// miss it until they reconnect, but no booking is slowed by a seat map.
//
// Critical-section events (entered, left) only draw the lock timeline: they
// are dropped, silently, once the queue is half full, so that they never
// take the place of a booking's.
func (b *Bus) Publish(_ context.Context, ev reservation.Event) {
	if sectionEvent(ev.Kind) && len(b.queue) >= publishQueue/2 {
		return
	}
	select {
	case b.queue <- ev:
	default:
		b.logger.Warn("booking event dropped: the publish queue is full", "screening", ev.ScreeningID, "booking", ev.BookingID)
	}
}

// sectionEvent reports whether events of kind only bracket a critical
// section.
func sectionEvent(kind reservation.EventKind) bool {
	return kind == reservation.EventEntered || kind == reservation.EventLeft
}

// publish sends queued events, in order, until ctx ends. Whatever has
// queued up within publishGather of an event, or while one batch was sent,
// goes out in one round trip (a pipeline): under load, batches grow
// instead of the queue.
func (b *Bus) publish(ctx context.Context) {
	batch := make([]reservation.Event, 0, publishBatch)
	var buf bytes.Buffer // the batch's messages (see send)
	gather := time.NewTimer(publishGather)
	defer gather.Stop()
	for {
		select {
		case ev := <-b.queue:
			gather.Reset(publishGather)
			select {
			case <-gather.C:
			case <-ctx.Done(): // send at once, then drain below
			}
			batch = b.fill(append(batch[:0], ev))
			b.send(context.WithoutCancel(ctx), batch, &buf)
		case <-ctx.Done():
			// The bookings of the last requests drained at shutdown are
			// still told to the other instances.
			for batch = b.fill(batch[:0]); len(batch) > 0; batch = b.fill(batch[:0]) {
				b.send(context.WithoutCancel(ctx), batch, &buf)
			}
			return
		}
	}
}

// fill appends queued events to batch, without waiting, up to publishBatch.
func (b *Bus) fill(batch []reservation.Event) []reservation.Event {
	for len(batch) < publishBatch {
		select {
		case ev := <-b.queue:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// send publishes a batch of events, each on its screening's channel, in one
// pipeline. The messages are encoded one after the other into buf (the
// bus's, reused from batch to batch) and published as slices of it: one
// encoding buffer per batch rather than a copy per event. The pipeline has
// written them by the time send returns, so the next batch may overwrite
// them.
func (b *Bus) send(ctx context.Context, batch []reservation.Event, buf *bytes.Buffer) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	pipe := b.client.Pipeline()
	buf.Reset()
	enc := json.NewEncoder(buf)
	for _, ev := range batch {
		start := buf.Len()
		if err := enc.Encode(toMessage(ev)); err != nil {
			b.logger.Error("encoding booking event", "err", err)
			continue
		}
		// Without the newline Encode ends the value with: the message
		// is the value alone, as json.Marshal writes it.
		msg := buf.Bytes()[start : buf.Len()-1]
		pipe.Publish(ctx, b.prefix+ev.ScreeningID, msg)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.logger.Warn("publishing booking events", "events", len(batch), "err", err)
	}
}

// Follow subscribes the bus to the events of a screening, if it is not
// already, and waits until Redis has confirmed it: once it returns nil,
// every event published after reaches the Deliverer. A page's stream calls
// it before reading its snapshot, so that no booking falls between the two.
// It waits two seconds at most; when Redis does not answer, it returns an
// error and go-redis subscribes once Redis is back. When ctx ends first,
// the error wraps ctx.Err(). A bus whose Deliverer is not a Watcher follows
// every screening from the start, and Follow returns nil at once.
func (b *Bus) Follow(ctx context.Context, screeningID string) error {
	if _, ok := b.deliver.(Watcher); !ok {
		return nil // subscribed to the pattern of every channel already
	}
	channel := b.prefix + screeningID
	b.mu.Lock()
	confirmed, ok := b.followed[channel]
	if !ok {
		confirmed = make(chan struct{})
		b.followed[channel] = confirmed
	}
	b.mu.Unlock()
	if !ok {
		// go-redis keeps the channel even when this fails, and subscribes
		// again once it has a connection.
		_ = b.pubsub.Subscribe(ctx, channel)
	}
	wait, cancel := context.WithTimeout(ctx, subscribeWait)
	defer cancel()
	select {
	case <-confirmed:
		return nil
	case <-wait.Done():
		return fmt.Errorf("redisevents: subscribing to %s: %w", channel, wait.Err())
	}
}

// confirm marks a subscription of Follow as confirmed by Redis.
func (b *Bus) confirm(channel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	confirmed, ok := b.followed[channel]
	if !ok {
		return
	}
	select {
	case <-confirmed: // confirmed before, and again after a reconnection
	default:
		close(confirmed)
	}
}

// receive hands every event received to the Deliverer, and tells Follow of
// every subscription confirmed, until the subscription is closed. go-redis
// reconnects and resubscribes by itself after an outage.
func (b *Bus) receive() {
	watcher, _ := b.deliver.(Watcher)
	for received := range b.pubsub.ChannelWithSubscriptions() {
		var m *redis.Message
		switch r := received.(type) {
		case *redis.Subscription:
			if r.Kind == "subscribe" {
				b.confirm(r.Channel)
			}
			continue
		case *redis.Message:
			m = r
		default:
			continue
		}
		screeningID, ok := strings.CutPrefix(m.Channel, b.prefix)
		if !ok || watcher != nil && !watcher.Watches(screeningID) {
			continue
		}
		var msg message
		if err := json.Unmarshal([]byte(m.Payload), &msg); err != nil || msg.ScreeningID != screeningID {
			b.logger.Warn("ignoring a malformed booking event", "channel", m.Channel)
			continue
		}
		b.deliver.Deliver(msg.event())
	}
}

// Close publishes the events still queued, closes the subscription and
// waits for both goroutines. Call it after the server has shut down, when
// no booking can publish another event, and before the Redis client is
// closed.
func (b *Bus) Close() {
	b.cancel()
	// Closing the subscription closes its channel, which ends receive.
	_ = b.pubsub.Close()
	b.wg.Wait()
}
