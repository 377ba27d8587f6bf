// Package batch runs the Redis scripts of concurrent callers together, in
// one pipeline per round trip ("shared round trips" in the distlock package
// doc): distlock's Redis backend uses one Batcher per client, and Redlock
// one per node.
package batch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is what a Batcher needs from a go-redis client: running scripts.
// A client that can also pipeline (see pipeliningClient) gets its calls
// batched; through one that cannot, every call goes out alone.
type Client interface {
	redis.Scripter
}

// pipeliningClient is a client that can send several commands in one
// write and read their replies in one read. *redis.Client,
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient all can.
type pipeliningClient interface {
	Pipeline() redis.Pipeliner
}

// Batcher runs the scripts of concurrent callers together, so that many
// goroutines locking and unlocking at once cost Redis and the client a few
// large round trips instead of one each ("group commit").
//
// Nothing waits to fill a batch. A call that finds nothing on the wire is
// sent at once, alone, as if there were no batcher. Calls made while a
// batch is on the wire queue up; when that batch is answered, its sender
// hands every caller its reply, and once the last of them has returned
// from Run, the first queued caller sends the whole queue as the next
// batch, in one pipeline. A lone caller therefore pays nothing extra, and
// a busy one waits for at most one round trip before its own.
//
// Why the next batch waits for the callers of the last one to return: a
// goroutine that locks and unlocks in a loop calls Run again as soon as
// it has its reply. Sent the moment a batch is answered, the next batch
// would leave behind every caller of that batch, who would queue behind
// it and go in the batch after: two half batches would take turns on the
// wire for good. Held until the answered callers have returned (a few
// instructions each, never a round trip, never a wait on the callers'
// own code), the next batch takes in those who came straight back, and a
// busy batcher sends one wave of callers per round trip.
//
// Every call is still one script run, EVALSHA, on the server: only the
// network trips are shared, never a script.
type Batcher struct {
	client  Client
	pipe    pipeliningClient // nil when client cannot pipeline: no batching
	timeout time.Duration    // bounds a batch on the wire; 0: no bound of its own

	mu      sync.Mutex
	sending bool          // a call or a batch is on the wire, or its callers are returning
	queue   []*scriptCall // calls waiting for the next batch, oldest first
	// returning counts the callers of the call or batch last sent that
	// have not yet returned from Run. The last of them to return (see
	// leave) lets the queue go: while it is above 0, sending is set.
	returning int

	// spare holds scriptCalls whose callers have returned, each with its
	// done channel empty, so that a busy batcher does not allocate a call
	// and a channel for every queued script. A call goes back only once
	// nothing refers to it: it left the queue, and its done was received.
	spare sync.Pool
}

// scriptCall is one queued script run and, once done is signalled, its
// reply in cmd.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd

	// leads is set, before done is signalled, on the caller that must send
	// the queue as the next batch.
	leads bool
	done  chan struct{} // buffered: signalled once
}

// New returns a Batcher on client. A batch goes out with the values of
// the context of the caller that sends it, but not its cancellation (one
// caller giving up must not fail the others) nor its deadline: a positive
// timeout is the deadline of every batch instead, counted from when it is
// sent, so that a batch on a hung connection ends; with 0, a batch waits
// as long as the client's own timeouts let it. A call that goes out alone
// keeps its caller's context.
func New(client Client, timeout time.Duration) *Batcher {
	b := &Batcher{client: client, timeout: timeout}
	b.pipe, _ = client.(pipeliningClient)
	return b
}

// Run runs script with keys and args, alone or in a batch, and returns
// its reply. A queued call whose ctx ends before its batch is sent leaves
// the queue and returns ctx.Err(), unsent. Once sent, it waits for its
// reply: the batch goes out with the context of its sender, without its
// cancellation, because one caller giving up must not fail the others
// (see New for its deadline).
func (b *Batcher) Run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if b.pipe == nil {
		return script.Run(ctx, b.client, keys, args...)
	}
	b.mu.Lock()
	if !b.sending {
		b.sending, b.returning = true, 1
		b.mu.Unlock()
		defer b.leave()
		return script.Run(ctx, b.client, keys, args...)
	}
	c, _ := b.spare.Get().(*scriptCall)
	if c == nil {
		c = &scriptCall{done: make(chan struct{}, 1)}
	}
	c.script, c.keys, c.args = script, keys, args
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	defer b.recycle(c)

	select {
	case <-c.done:
	case <-ctx.Done():
		if b.withdraw(c) {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(ctx.Err())
			return cmd
		}
		<-c.done // too late: c is on the wire, or must send the queue
	}
	if c.leads {
		b.mu.Lock()
		batch := b.queue // c is its first call
		b.queue, b.returning = nil, len(batch)
		b.mu.Unlock()
		b.send(ctx, batch)
		for _, other := range batch[1:] {
			other.done <- struct{}{}
		}
	}
	b.leave() // not for a withdrawn call: it was never sent
	return c.cmd
}

// recycle puts c, whose caller is done with it, back among the spare calls.
func (b *Batcher) recycle(c *scriptCall) {
	*c = scriptCall{done: c.done}
	b.spare.Put(c)
}

// RunAlone runs script with keys and args in a round trip of its own,
// never queued behind a batch: for a call whose latency matters more than
// the round trips it would share, such as the renewal of a held lock.
func (b *Batcher) RunAlone(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	return script.Run(ctx, b.client, keys, args...)
}

// withdraw takes c out of the queue, if it is still there and has not been
// told to send it, and reports whether it did. A withdrawn call was never
// sent.
func (b *Batcher) withdraw(c *scriptCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.Index(b.queue, c)
	if i < 0 || c.leads {
		return false
	}
	b.queue = slices.Delete(b.queue, i, i+1)
	return true
}

// leave is called by every caller of a call or batch that was sent, as it
// returns from Run with its reply. The last of them hands the wire on: the
// first queued caller, if any, is told to send the queue.
func (b *Batcher) leave() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.returning--; b.returning > 0 {
		return
	}
	if len(b.queue) == 0 {
		b.sending = false
		return
	}
	first := b.queue[0]
	first.leads = true
	first.done <- struct{}{}
}

// send runs batch in one pipeline and stores every reply in its call. A
// server that has not seen a script yet (NOSCRIPT: it restarted, or was
// flushed) gets that call again with the script's source.
func (b *Batcher) send(ctx context.Context, batch []*scriptCall) {
	ctx = context.WithoutCancel(ctx)
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	pipe := b.pipe.Pipeline()
	for _, c := range batch {
		c.cmd = c.script.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // every call's error is in its own cmd
	for _, c := range batch {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.cmd = c.script.Eval(ctx, b.client, c.keys, c.args...)
		}
	}
}
