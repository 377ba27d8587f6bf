package postgres

import (
	"context"
	"errors"

	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/reservation"
)

// GroupCommit is a Store whose Book writes the bookings of concurrent
// callers together ("group commit"): many bookings share one round trip, one transaction and one
// COMMIT (one WAL flush) instead of paying for one each. It is the
// database's counterpart of distlock's batcher, which shares Redis round
// trips the same way.
//
// Nothing waits to fill a batch. A booking that finds no batch on the wire
// is sent at once, alone, as the one statement book_seats, exactly as
// the plain Store sends it. Bookings that come while a batch is on the wire
// queue up, and when it is answered the queue is sent as the next batch,
// as one statement too (one write, one read), its own transaction:
//
//	SELECT code, detail, message FROM book_batch(...) -- one row per booking
//
// book_batch (migration 0005) takes the bookings as arrays, locks every
// seat of the batch in one order, then writes each booking, all or
// nothing. One statement is bound, run and answered once for the whole
// batch, where BEGIN, a statement per booking and COMMIT would each be
// bound, run and answered on their own: the API allocates less per batch
// (docs/benchmarks-loadgen.md, "One statement per batch").
//
// A lone booking thus pays nothing extra, and a busy one waits for at most
// one batch before its own.
//
// A second batch goes on the wire beside the first only once secondBatchAt
// bookings wait (maxInFlight batches at most): then the queue is worth a
// transaction of its own, and a first batch that waits for a row lock
// (another instance's batch of the same seats) does not hold every other
// booking of the instance up behind it. Waiting for secondBatchAt keeps
// the batches of an instance that is busy but not swamped large: sending
// whatever had queued as a second batch at once would split them in two,
// and every batch costs the API and the server a round trip, a
// transaction and a COMMIT (docs/benchmarks-loadgen.md measures it with
// three instances sharing one machine's load).
//
// Each booking stays all or nothing. book_batch runs each as book_seats
// in a subtransaction: a booking the guard refuses undoes its own writes
// only and reports why as its row, not as an error that would abort the
// transaction, so the others in the batch go on.
//
// A 201 means "committed" in a batch as it does alone: every caller gets its answer only once
// the statement's commit is acknowledged (the server commits before it
// says the statement is done). A statement or commit the server refuses
// fails every booking of the batch (nothing was written); one that is
// never answered (the connection died, the batch's deadline passed)
// leaves every booking in doubt (reservation.ErrWriteInDoubt), as it
// leaves a lone booking.
//
// One caller giving up must not fail the others: a batch runs on a context
// of its own, which ends at the latest deadline of its callers (a caller
// without one counts as batchTimeout from its call), not at the first
// cancellation. A caller whose context ends while it is queued leaves the
// queue, unsent. One whose context ends while its booking is on the wire
// waits for the batch's answer, which that deadline bounds: answering
// "in doubt" at once would let the service look the booking up before the
// batch commits, find nothing, and refund the charge of a booking that
// then commits.
//
// Two batches must not deadlock. Alone, book_seats locks a booking's seat
// rows in seat order, so two single bookings wait for each other in one
// order. A batch holds the rows of its earlier bookings while it writes the
// later ones, which would break that order: batch 1 writing A1 then A2,
// batch 2 (another instance) A2 then A1, would each wait for the other
// until Postgres aborted one after deadlock_timeout. So a batch first locks
// every seat row it is about to write, in (screening, seat) order, with
// one INSERT (book_batch's first): every writer of seats then takes its
// row locks in that one order, and no cycle can form among them. Bookings
// can still wait for each other on an idempotency key (two batches each
// inserting the other's key); the booking that Postgres picks as the
// deadlock's victim is undone alone, by its subtransaction, and sent
// again in the next batch (deadlockRetries times at most).
type GroupCommit struct {
	*Store
	c *committer
}

var _ reservation.Store = (*GroupCommit)(nil)

// NewGroupCommit returns s with group commit in front of its Book. It owns
// s from then on: its Close closes s.
func NewGroupCommit(s *Store) *GroupCommit {
	return &GroupCommit{Store: s, c: &committer{pool: s.pool}}
}

// Book is Store.Book, sharing a round trip, a transaction and its COMMIT
// with the bookings of other callers when they come together; each stays
// all or nothing on its own, and it returns only once that COMMIT is
// answered. It returns the errors of Store.Book. A ctx that ends while the
// booking is on the wire with others does not stop their transaction:
// Book waits for the batch's answer, which the latest of their deadlines
// bounds.
func (g *GroupCommit) Book(ctx context.Context, w reservation.Write) error {
	if err := w.Validate(); err != nil {
		return err
	}
	if w.PaymentID != "" {
		// A paid booking waited for its payment; it waits for no batch.
		return g.Store.Book(ctx, w)
	}
	return g.c.book(ctx, w)
}

// Close waits for the batches on the wire, then closes the store.
func (g *GroupCommit) Close() {
	g.c.wait()
	g.Store.Close()
}

// committer is GroupCommit's queue of bookings and the goroutines that
// send it, batch by batch.
type committer struct {
	pool    *pgxpool.Pool
	senders sync.WaitGroup // the send goroutines; close waits for them

	mu       sync.Mutex
	inFlight int             // send goroutines, at most maxInFlight: each has a batch on the wire or is taking one
	queue    []*pendingWrite // bookings waiting for the next batch, oldest first
}

// maxInFlight is how many batches may be on the wire at once. With one, a
// batch waiting for a row lock (another instance's batch of the same
// seats) would hold every other booking of the instance up behind it; with
// two, the next batch goes out meanwhile. More would send bookings alone
// that could have shared a batch.
const maxInFlight = 2

// secondBatchAt is how many bookings must wait before a batch goes on the
// wire while another is there: fewer wait for it and share the next
// batch. A third of maxBatch: one instance under 64 clients still reaches
// it, and so keeps two batches going, while an instance with a third of
// that load sends one batch at a time, each about twice as large.
const secondBatchAt = maxBatch / 3

// maxBatch bounds the bookings of one batch. Each is a subtransaction, and
// a transaction with more than 64 subtransactions that wrote overflows
// the cache every snapshot of the server reads, which slows all queries.
const maxBatch = 48

// batchTimeout is the deadline a booking whose caller has none gives its
// batch: a batch on a connection that never answers must end, its
// bookings then in doubt.
const batchTimeout = 10 * time.Second

// deadlockRetries is how many times a booking chosen as a deadlock's
// victim is sent again before its error is returned.
const deadlockRetries = 3

// pendingWrite is one queued booking and, once done is closed, its
// outcome.
type pendingWrite struct {
	w        reservation.Write
	deadline time.Time // of its caller's context, or batchTimeout from the call
	retries  int       // times sent again after a deadlock

	err  error
	done chan struct{}
}

// book writes w, alone or in a batch, and returns Book's error.
func (c *committer) book(ctx context.Context, w reservation.Write) error {
	p := c.enqueue(ctx, w)[0]
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
	}
	if c.withdraw(p) {
		return translate("book", ctx.Err())
	}
	<-p.done // on the wire: the batch's deadline bounds the wait
	return p.err
}

// enqueue queues ws, in one go, for the next batch, and starts sending
// if nothing is on the wire.
func (c *committer) enqueue(ctx context.Context, ws ...reservation.Write) []*pendingWrite {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(batchTimeout)
	}
	pending := make([]*pendingWrite, len(ws))
	for i, w := range ws {
		pending[i] = &pendingWrite{w: w, deadline: deadline, done: make(chan struct{})}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(c.queue, pending...)
	if c.inFlight == 0 || c.inFlight < maxInFlight && len(c.queue) >= secondBatchAt {
		c.inFlight++
		c.senders.Go(c.send)
	}
	return pending
}

// withdraw takes p out of the queue if it is still there, and reports
// whether it did. A withdrawn booking was never sent.
func (c *committer) withdraw(p *pendingWrite) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.queue, p)
	if i < 0 {
		return false
	}
	c.queue = slices.Delete(c.queue, i, i+1)
	return true
}

// send sends the queue, maxBatch bookings at a time, until it is empty,
// or until fewer than secondBatchAt wait while another send goroutine is
// there to take them. It runs in a goroutine of its own while there is
// something to send.
func (c *committer) send() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), maxBatch)
		if n == 0 || c.inFlight > 1 && n < secondBatchAt {
			c.inFlight--
			c.mu.Unlock()
			return
		}
		batch := slices.Clone(c.queue[:n])
		c.queue = slices.Delete(c.queue, 0, n)
		c.mu.Unlock()

		ctx, cancel := batchContext(batch)
		errs := writeBatch(ctx, c.pool, writes(batch))
		cancel()
		var again []*pendingWrite
		for i, p := range batch {
			if deadlocked(errs[i]) && p.retries < deadlockRetries {
				p.retries++
				again = append(again, p)
				continue
			}
			p.err = errs[i]
			close(p.done)
		}
		if len(again) > 0 {
			c.mu.Lock()
			c.queue = append(again, c.queue...)
			c.mu.Unlock()
		}
	}
}

// batchContext is the context a batch runs on: no caller's cancellation
// reaches it, and it ends at the latest of its callers' deadlines, when
// nobody waits for its answer any more.
func batchContext(batch []*pendingWrite) (context.Context, context.CancelFunc) {
	var last time.Time
	for _, p := range batch {
		if p.deadline.After(last) {
			last = p.deadline
		}
	}
	return context.WithDeadline(context.Background(), last)
}

// wait waits for the send goroutines, once no booking comes any more:
// each ends when the queue is empty.
func (c *committer) wait() { c.senders.Wait() }

func writes(batch []*pendingWrite) []reservation.Write {
	ws := make([]reservation.Write, len(batch))
	for i, p := range batch {
		ws[i] = p.w
	}
	return ws
}

// deadlocked reports whether err is Postgres's deadlock_detected.
func deadlocked(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40P01"
}
