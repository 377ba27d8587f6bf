package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/reservation"
)

// Booking events travel between instances over Redis pub/sub: the instance
// that wrote a booking publishes it on the channel of its screening, and
// every instance, subscribed once to the pattern of all such channels, hands
// what it receives to its hub, which fans it out to the pages open on it.
// Pub/sub is fire-and-forget: an instance that is not connected misses
// events, which is why a page starts every stream with a snapshot.
const (
	eventChannelPrefix = "seatlock:events:"
	eventPattern       = eventChannelPrefix + "*"

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

// eventMessage is an Event on the wire between instances.
type eventMessage struct {
	Kind        reservation.EventKind `json:"kind"`
	ScreeningID string                `json:"screening_id"`
	BookingID   string                `json:"booking_id"`
	HoldID      string                `json:"hold_id,omitempty"`
	ExpiresAt   time.Time             `json:"expires_at,omitzero"`
	Seats       []string              `json:"seats"`
	At          time.Time             `json:"at"`
}

// redisEvents publishes this instance's booking events to Redis and
// delivers everyone's to the hub. It owns two goroutines, publish and
// receive; close stops both and waits for them.
type redisEvents struct {
	client *redis.Client
	hub    *httpapi.Hub
	logger *slog.Logger

	queue  chan reservation.Event
	pubsub *redis.PubSub
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startEvents subscribes to the event channels of every screening. It
// waits up to subscribeWait for Redis to confirm the subscription, so that
// an instance that answers /healthz also sees every event written after;
// when Redis does not answer, it starts anyway (the API must answer 503
// rather than not start) and go-redis subscribes once Redis is back.
func startEvents(ctx context.Context, client *redis.Client, hub *httpapi.Hub, logger *slog.Logger) *redisEvents {
	pubsub := client.PSubscribe(ctx, eventPattern)
	wait, cancel := context.WithTimeout(ctx, subscribeWait)
	if _, err := pubsub.Receive(wait); err != nil {
		logger.Warn("live seat map: not subscribed to booking events yet; retrying in the background", "err", err)
	}
	cancel()
	// The goroutines' context is not ctx: they live until close, not
	// until the start-up context ends.
	runCtx, cancel := context.WithCancel(context.Background())
	e := &redisEvents{
		client: client,
		hub:    hub,
		logger: logger,
		queue:  make(chan reservation.Event, publishQueue),
		pubsub: pubsub,
		cancel: cancel,
	}
	e.wg.Go(func() { e.publish(runCtx) })
	e.wg.Go(e.receive)
	return e
}

// Publish queues an event for Redis without waiting. When the queue is full
// (Redis is down or slow) the event is dropped with a warning: pages then
// miss it until they reconnect, but no booking is slowed by a seat map.
func (e *redisEvents) Publish(_ context.Context, ev reservation.Event) {
	select {
	case e.queue <- ev:
	default:
		e.logger.Warn("booking event dropped: the publish queue is full", "screening", ev.ScreeningID, "booking", ev.BookingID)
	}
}

// publish sends queued events, in order, until ctx ends. Whatever has
// queued up while one batch was sent goes out in the next, in one round
// trip (a pipeline): under load, batches grow instead of the queue.
func (e *redisEvents) publish(ctx context.Context) {
	batch := make([]reservation.Event, 0, publishBatch)
	for {
		select {
		case ev := <-e.queue:
			batch = e.fill(append(batch[:0], ev))
			e.send(context.WithoutCancel(ctx), batch)
		case <-ctx.Done():
			// The bookings of the last requests drained at shutdown are
			// still told to the other instances.
			for batch = e.fill(batch[:0]); len(batch) > 0; batch = e.fill(batch[:0]) {
				e.send(context.WithoutCancel(ctx), batch)
			}
			return
		}
	}
}

// fill appends queued events to batch, without waiting, up to publishBatch.
func (e *redisEvents) fill(batch []reservation.Event) []reservation.Event {
	for len(batch) < publishBatch {
		select {
		case ev := <-e.queue:
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// send publishes a batch of events, each on its screening's channel, in one
// pipeline.
func (e *redisEvents) send(ctx context.Context, batch []reservation.Event) {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	pipe := e.client.Pipeline()
	for _, ev := range batch {
		msg, err := json.Marshal(eventMessage(ev))
		if err != nil {
			e.logger.Error("encoding booking event", "err", err)
			continue
		}
		pipe.Publish(ctx, eventChannelPrefix+ev.ScreeningID, msg)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		e.logger.Warn("publishing booking events", "events", len(batch), "err", err)
	}
}

// receive hands every event received to the hub until the subscription is
// closed. go-redis reconnects and resubscribes by itself after an outage.
func (e *redisEvents) receive() {
	for m := range e.pubsub.Channel() {
		var msg eventMessage
		if err := json.Unmarshal([]byte(m.Payload), &msg); err != nil ||
			msg.ScreeningID != strings.TrimPrefix(m.Channel, eventChannelPrefix) {
			e.logger.Warn("ignoring a malformed booking event", "channel", m.Channel)
			continue
		}
		e.hub.Deliver(reservation.Event(msg))
	}
}

// close publishes the events still queued, closes the subscription and
// waits for both goroutines. Call it after the server has shut down, when
// no booking can queue another event.
func (e *redisEvents) close() {
	e.cancel()
	// Closing the subscription closes its channel, which ends receive.
	_ = e.pubsub.Close()
	e.wg.Wait()
}
