package zklock

import (
	"context"
	"fmt"
	"sync"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

// lock is a held lock: one ephemeral node per key, each first in its
// key's queue, each watched by a goroutine of its own.
type lock struct {
	locker *Locker
	keys   []string // sorted, without duplicates; State.Keys too
	nodes  []string // nodes[i] is the znode that holds keys[i]
	wg     sync.WaitGroup

	// watching ends with Release: it stops the watch goroutines, and
	// their calls to ZooKeeper. stopWatching cancels it.
	watching     context.Context
	stopWatching context.CancelFunc

	// State's Fences[i] is the czxid of nodes[i], set by hold, never
	// changed after. Release marks it released before it deletes the
	// nodes, so the deletion its own watches see is not a loss.
	lockstate.State
}

var _ distlock.Lock = (*lock)(nil)

// lose declares the lock lost with cause, unless it was lost or released
// already.
func (lk *lock) lose(cause error) { lk.Lose(cause) }

// watch waits for the end of node: its deletion (by the session's expiry,
// or by anybody else) or the end of the watch (the session expired, the
// connection was closed). Either is a loss, unless Release came first.
func (lk *lock) watch(node string, ch <-chan zk.Event) {
	defer lk.wg.Done()
	for {
		select {
		case <-lk.watching.Done():
			return
		case ev := <-ch:
			switch ev.Type {
			case zk.EventNodeDeleted:
				lk.lose(fmt.Errorf("%w: node %s was deleted", distlock.ErrLost, node))
				return
			case zk.EventNotWatching:
				lk.lose(fmt.Errorf("%w: watch on %s ended: %w", distlock.ErrLost, node, ev.Err))
				return
			}
			// Another event (its data changed): a watch fires once, so set
			// it again. If that fails the node can no longer be watched,
			// which is a loss too: the safe side.
			exists, _, next, err := lk.locker.existsW(lk.watching, node)
			if lk.watching.Err() != nil {
				return // released meanwhile
			}
			if err != nil || !exists {
				lk.lose(fmt.Errorf("%w: node %s: gone or unwatchable (%v)", distlock.ErrLost, node, err))
				return
			}
			ch = next
		}
	}
}

// Refresh checks that every node of the lock still exists. There is no
// lease to extend: a node lives as long as the session, which the client
// keeps alive by itself. It returns ErrNotHeld, and declares the lock lost,
// if a node is gone; ErrNotHeld if the lock was lost or released before;
// or an error from ZooKeeper, wrapped (ErrNoAnswer when ctx or
// Options.CallTimeout ended the wait for an answer).
func (lk *lock) Refresh(ctx context.Context) error {
	if lk.Err() != nil {
		return distlock.ErrNotHeld
	}
	for _, node := range lk.nodes {
		exists, _, _, err := lk.locker.exists(ctx, node)
		if err != nil {
			return fmt.Errorf("zklock: refresh %s: %w", node, err)
		}
		if !exists {
			lk.lose(fmt.Errorf("%w: node %s is gone", distlock.ErrLost, node))
			return distlock.ErrNotHeld
		}
	}
	return nil
}

// Release stops the watches, waits for them, and deletes every node of the
// lock, which wakes the next waiter of each key. It returns ErrNotHeld if
// it was called before, if the lock had been lost, or if a node was gone
// (the others are deleted all the same); or an error from ZooKeeper,
// wrapped: the Locker's sweeper then deletes that node and the ones after
// it once it can (without trying each now: that would cost a timeout
// apiece), and they are gone anyway when the session ends. Each call ends
// with ctx, or after Options.CallTimeout (ErrNoAnswer).
func (lk *lock) Release(ctx context.Context) error {
	lostErr, first := lk.MarkReleased(distlock.ErrNotHeld)
	if !first {
		return distlock.ErrNotHeld
	}
	lk.stopWatching()
	lk.wg.Wait()

	l := lk.locker
	l.mu.Lock()
	delete(l.held, lk)
	l.mu.Unlock()

	gone, err := l.removeAll(ctx, lk.nodes)
	switch {
	case lostErr != nil:
		return fmt.Errorf("%w: lost before the release (%v)", distlock.ErrNotHeld, lostErr)
	case err != nil:
		return err
	case gone > 0:
		return fmt.Errorf("%w: %d of the %d nodes of %q were gone", distlock.ErrNotHeld, gone, len(lk.nodes), lk.keys)
	}
	return nil
}
