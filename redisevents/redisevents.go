// Package redisevents carries booking events between API instances over
// Redis pub/sub: it is the Redis adapter of reservation.EventPublisher, and
// it is named after what it adapts, as reservation/postgres is.
//
// The instance that wrote a booking publishes its event on the channel of
// its screening, "seatlock:events:<screening id>"; every instance,
// subscribed once to the pattern of all such channels, hands what it
// receives to its Deliverer (in the API, the httpapi.Hub that feeds the
// live seat maps; being a Watcher, it is handed only the events of the
// screenings a page is open on, and the bus decodes no other):
//
//	bus := redisevents.Start(ctx, client, hub, redisevents.Options{Logger: logger})
//	defer bus.Close() // after the HTTP server has shut down
//	svc := reservation.NewService(store, reservation.Options{Events: bus})
//
// Pub/sub is fire-and-forget: an instance that is not connected misses
// events, which is why a page starts every stream with a snapshot. A booking
// never waits for Redis: Publish only queues (see Bus.Publish).
package redisevents

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/reservation"
)

const (
	// ChannelPrefix starts the channel of every screening's events.
	ChannelPrefix = "seatlock:events:"
	pattern       = ChannelPrefix + "*"

	// publishQueue bounds the events waiting to be published; a booking
	// never waits for Redis to take its event (see Publish).
	publishQueue = 1024
	// publishBatch bounds the events sent in one round trip.
	publishBatch = 256
	// publishTimeout bounds one round trip.
	publishTimeout = 2 * time.Second
	// subscribeWait bounds the wait for the subscription at start-up.
	subscribeWait = 2 * time.Second
)

// Deliverer receives every event published by any instance, this one
// included. httpapi.Hub is one.
type Deliverer interface {
	Deliver(reservation.Event)
}

// Watcher is a Deliverer that can say whether anyone here wants a
// screening's events at all; the bus then drops the others unread, before
// decoding them. httpapi.Hub is one: an instance with no page open on a
// screening decodes none of the events its neighbours' bookings send.
type Watcher interface {
	Deliverer
	Watches(screeningID string) bool
}

// Options configure a Bus. The zero value works.
type Options struct {
	// Logger receives warnings (events dropped or malformed, Redis
	// errors). Nil discards them.
	Logger *slog.Logger
}

// message is an Event on the wire between instances.
type message struct {
	Kind        reservation.EventKind `json:"kind"`
	ScreeningID string                `json:"screening_id"`
	BookingID   string                `json:"booking_id"`
	HoldID      string                `json:"hold_id,omitempty"`
	Holder      string                `json:"holder,omitempty"`
	ExpiresAt   time.Time             `json:"expires_at,omitzero"`
	Seats       []string              `json:"seats"`
	At          time.Time             `json:"at"`
}

// Bus publishes this instance's booking events to Redis and delivers
// everyone's to a Deliverer. It owns two goroutines, publish and receive;
// Close stops both and waits for them.
type Bus struct {
	client  *redis.Client
	deliver Deliverer
	logger  *slog.Logger

	queue  chan reservation.Event
	pubsub *redis.PubSub
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

var _ reservation.EventPublisher = (*Bus)(nil)

// Start subscribes to the event channels of every screening and starts the
// bus. It waits up to two seconds for Redis to confirm the subscription, so
// that an instance that answers /healthz also sees every event written
// after; when Redis does not answer, it starts anyway (the API must answer
// 503 rather than not start) and go-redis subscribes once Redis is back.
func Start(ctx context.Context, client *redis.Client, to Deliverer, opts Options) *Bus {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	pubsub := client.PSubscribe(ctx, pattern)
	wait, cancel := context.WithTimeout(ctx, subscribeWait)
	if _, err := pubsub.Receive(wait); err != nil {
		logger.Warn("live seat map: not subscribed to booking events yet; retrying in the background", "err", err)
	}
	cancel()
	// The goroutines' context is not ctx: they live until Close, not
	// until the start-up context ends.
	runCtx, cancel := context.WithCancel(context.Background())
	b := &Bus{
		client:  client,
		deliver: to,
		logger:  logger,
		queue:   make(chan reservation.Event, publishQueue),
		pubsub:  pubsub,
		cancel:  cancel,
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
// queued up while one batch was sent goes out in the next, in one round
// trip (a pipeline): under load, batches grow instead of the queue.
func (b *Bus) publish(ctx context.Context) {
	batch := make([]reservation.Event, 0, publishBatch)
	for {
		select {
		case ev := <-b.queue:
			batch = b.fill(append(batch[:0], ev))
			b.send(context.WithoutCancel(ctx), batch)
		case <-ctx.Done():
			// The bookings of the last requests drained at shutdown are
			// still told to the other instances.
			for batch = b.fill(batch[:0]); len(batch) > 0; batch = b.fill(batch[:0]) {
				b.send(context.WithoutCancel(ctx), batch)
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
// pipeline.
func (b *Bus) send(ctx context.Context, batch []reservation.Event) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	pipe := b.client.Pipeline()
	for _, ev := range batch {
		msg, err := json.Marshal(message(ev))
		if err != nil {
			b.logger.Error("encoding booking event", "err", err)
			continue
		}
		pipe.Publish(ctx, ChannelPrefix+ev.ScreeningID, msg)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.logger.Warn("publishing booking events", "events", len(batch), "err", err)
	}
}

// receive hands every event received to the Deliverer until the
// subscription is closed. go-redis reconnects and resubscribes by itself
// after an outage.
func (b *Bus) receive() {
	watcher, _ := b.deliver.(Watcher)
	for m := range b.pubsub.Channel() {
		if watcher != nil && !watcher.Watches(strings.TrimPrefix(m.Channel, ChannelPrefix)) {
			continue
		}
		var msg message
		if err := json.Unmarshal([]byte(m.Payload), &msg); err != nil ||
			msg.ScreeningID != strings.TrimPrefix(m.Channel, ChannelPrefix) {
			b.logger.Warn("ignoring a malformed booking event", "channel", m.Channel)
			continue
		}
		b.deliver.Deliver(reservation.Event(msg))
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
