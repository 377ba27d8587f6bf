// Package releases carries the release notifications of Redis locks to
// the waiters on them, over one pub/sub connection per server: the Redis
// backend and each node of a Redlock use it.
package releases

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Subscriber carries release notifications to the waiting Obtains of one
// Redis locker (or one Redlock node). A pub/sub connection per waiter would cost a server
// connection and a file descriptor each (64 waiters, 64 connections); a
// subscriber multiplexes every waiter over one connection instead, and is
// subscribed to a key's channel exactly while somebody waits for that key.
//
// The subtle part is knowing when a subscription is in place, because a
// waiter must not look at the key again before that, or a release could
// slip between the look and the subscription. SUBSCRIBE returns nothing a
// caller can wait on, so after it the subscriber sends PING with a fresh
// payload on the same connection: Redis answers commands of one connection
// in order, so the matching PONG proves that the server has processed the
// SUBSCRIBE (and every UNSUBSCRIBE before it).
//
// The receive goroutine starts with the first waiter and stops in close,
// which waits for it.
type Subscriber struct {
	client Client
	ctx    context.Context    // for the pub/sub connection's commands
	cancel context.CancelFunc // ends ctx, in close

	// mu protects the fields below. It is held while SUBSCRIBE,
	// UNSUBSCRIBE and PING are written, so the commands reach the server in
	// the same order as the changes of channels they stand for.
	mu       sync.Mutex
	ps       *redis.PubSub            // nil until the first watch
	channels map[string]*channelState // channels subscribed (or being subscribed) to
	barriers map[string]chan struct{} // PING payload -> closed when its PONG arrives
	seq      uint64                   // the last PING payload used
	closed   bool
	done     chan struct{} // closed when the receive goroutine returns
}

// Client is what a Subscriber needs from a go-redis client.
type Client interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// channelState is one subscribed channel.
type channelState struct {
	waiters map[*Watch]struct{}
	ready   chan struct{} // closed once the server has processed the SUBSCRIBE
}

// Watch is one waiting Obtain's interest in the release of some keys.
type Watch struct {
	s        *Subscriber
	channels []string
	wake     chan struct{} // receives when a release was published; capacity 1
	ready    chan struct{} // closed once every channel is subscribed
}

// Wake receives when a release was published on one of the channels of
// the watch. A release published while the waiter was busy trying is kept
// (one, of any number), so none is lost.
func (w *Watch) Wake() <-chan struct{} { return w.wake }

// Ready is closed once every channel of the watch is subscribed: from then
// on no release is missed. If the connection fails, it may never be, and
// the waiter polls instead.
func (w *Watch) Ready() <-chan struct{} { return w.ready }

// healthEvery is how long the receive goroutine waits for a message before
// it pings the server, so that a silently dead connection is noticed and
// replaced.
const healthEvery = 30 * time.Second

// New returns a Subscriber on client. It does no I/O: the pub/sub
// connection opens with the first Watch.
func New(client Client) *Subscriber {
	ctx, cancel := context.WithCancel(context.Background())
	return &Subscriber{
		client:   client,
		ctx:      ctx,
		cancel:   cancel,
		channels: make(map[string]*channelState),
		barriers: make(map[string]chan struct{}),
		done:     make(chan struct{}),
	}
}

// closedChan returns a channel that is ready at once.
func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Watch subscribes to channels and returns the watch; the caller must call
// Stop. wake is the channel the watch sends to (Wake): a waiter on several
// servers passes the same one, of capacity 1, to each server's Subscriber;
// nil makes one.
func (s *Subscriber) Watch(channels []string, wake chan struct{}) *Watch {
	if wake == nil {
		wake = make(chan struct{}, 1)
	}
	w := &Watch{s: s, channels: channels, wake: wake}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		w.ready = closedChan() // nothing will wake it: it polls
		return w
	}
	if s.ps == nil {
		s.ps = s.client.Subscribe(s.ctx)
		go s.receive()
	}

	var fresh []string
	allReady := true
	for _, c := range channels {
		st := s.channels[c]
		if st == nil {
			st = &channelState{waiters: make(map[*Watch]struct{})}
			s.channels[c] = st
			fresh = append(fresh, c)
		} else {
			select {
			case <-st.ready:
			default:
				allReady = false
			}
		}
		st.waiters[w] = struct{}{}
	}
	if len(fresh) == 0 && allReady {
		w.ready = closedChan()
		return w
	}
	// A write error leaves the channel in the PubSub's list: go-redis
	// subscribes again when it reconnects.
	if len(fresh) > 0 {
		_ = s.ps.Subscribe(s.ctx, fresh...)
	}
	// One PING after the SUBSCRIBE also proves every earlier SUBSCRIBE done.
	w.ready = s.barrier()
	for _, c := range fresh {
		s.channels[c].ready = w.ready
	}
	return w
}

// barrier sends a PING with a fresh payload and returns the channel closed
// when its PONG arrives. s.mu must be held.
func (s *Subscriber) barrier() chan struct{} {
	s.seq++
	payload := strconv.FormatUint(s.seq, 10)
	ch := make(chan struct{})
	s.barriers[payload] = ch
	_ = s.ps.Ping(s.ctx, payload) // if lost, receive sends it again after reconnecting
	return ch
}

// Stop ends the watch, and unsubscribes from the channels nobody else
// waits on.
func (w *Watch) Stop() {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var unused []string
	for _, c := range w.channels {
		st := s.channels[c]
		if st == nil {
			continue // the subscriber was closed
		}
		delete(st.waiters, w)
		if len(st.waiters) == 0 {
			delete(s.channels, c)
			unused = append(unused, c)
		}
	}
	if len(unused) > 0 && !s.closed {
		_ = s.ps.Unsubscribe(s.ctx, unused...)
	}
}

// receive reads the pub/sub connection until close. go-redis reconnects
// and subscribes again after a connection error; releases published in
// between are missed, which the waiters' backoff polling covers.
func (s *Subscriber) receive() {
	defer close(s.done)
	for {
		msg, err := s.ps.ReceiveTimeout(s.ctx, healthEvery)
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			var netErr net.Error
			if errors.As(err, &netErr) && netErr.Timeout() {
				_ = s.ps.Ping(s.ctx) // a dead connection fails this or the next read
				continue
			}
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(100 * time.Millisecond): // do not spin on a server that is down
			}
			s.resendBarriers()
			continue
		}
		switch m := msg.(type) {
		case *redis.Message:
			s.notify(m.Channel)
		case *redis.Pong:
			s.confirm(m.Payload)
		}
	}
}

// notify wakes every waiter on channel. A waiter that is busy trying finds
// the wake-up buffered, so none is lost.
func (s *Subscriber) notify(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.channels[channel]; st != nil {
		for w := range st.waiters {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (s *Subscriber) confirm(payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.barriers[payload]; ok {
		close(ch)
		delete(s.barriers, payload)
	}
}

// resendBarriers sends again the PINGs whose PONG a broken connection may
// have swallowed. On the new connection go-redis has subscribed again
// before the PING, so its PONG still proves the subscriptions.
func (s *Subscriber) resendBarriers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for payload := range s.barriers {
		_ = s.ps.Ping(s.ctx, payload)
	}
}

// Close stops the receive goroutine, if it started, and waits for it.
// Watches still running are no longer woken; they poll.
func (s *Subscriber) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	ps := s.ps
	clear(s.channels)
	s.mu.Unlock()

	s.cancel()
	if ps != nil {
		_ = ps.Close() // interrupts the read in receive
		<-s.done
	}
}
