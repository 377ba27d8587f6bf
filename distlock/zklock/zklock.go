package zklock

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

var _ distlock.Locker = (*Locker)(nil)

// Options tunes a Locker. The zero value works.
type Options struct {
	// Root is the znode under which every key gets a directory of its own.
	// Default "/seatlock/locks". Lockers that must exclude each other use
	// the same Root.
	Root string

	// ACL is given to every znode the Locker creates. Default
	// zk.WorldACL(zk.PermAll).
	ACL []zk.ACL

	// CallTimeout bounds the wait for the answer to each ZooKeeper call
	// whose ctx does not end sooner: a Release, a Refresh or an Obtain
	// with a context that has no deadline, and the sweeper's calls.
	// Default 10 s, or the session timeout with Dial when that is longer:
	// a bound on a hang, not a deadline a slow server should meet. A call
	// not answered by then fails with an error wrapping ErrNoAnswer.
	CallTimeout time.Duration
}

// Locker is a distlock.Locker on ZooKeeper: a fair lock per key, in the
// order the waiters arrived, held by an ephemeral sequential znode. See the
// package documentation for the recipe and what it promises.
//
// A Locker is safe for concurrent use. Call Close when done with it.
type Locker struct {
	conn *zk.Conn
	opts Options // with defaults applied

	// owned is set by Dial: Close then closes conn, and the session events
	// are followed (grace is the time a disconnected holder keeps its
	// claim). A Locker from New sees no session events.
	owned bool
	grace time.Duration

	done     chan struct{} // closed by Close: stops the goroutines below
	orphaned chan struct{} // wakes the sweeper; buffered, never closed
	wg       sync.WaitGroup

	// calls counts the goroutines of ZooKeeper calls in flight (see
	// call): each ends when the client library answers its call. waiting
	// counts the callers that wait for an answer.
	calls   sync.WaitGroup
	waiting atomic.Int64

	// mu protects the fields below. held lists the locks to tell when the
	// session is gone; a lock is in it from Obtain until its Release.
	// calls.Add happens under mu, and only while closed is false.
	mu      sync.Mutex
	held    map[*lock]struct{}
	orphans []orphan
	closed  bool
}

// orphan is a node this Locker may have left behind: a create whose reply
// was lost, or a delete that failed. The sweeper deletes it, so that it
// does not block its key for as long as the session lives.
type orphan struct {
	dir, guid string
	session   int64 // the node dies with this session anyway
}

// New returns a Locker on conn, which the caller keeps owning: Close does
// not close it. It does no I/O.
//
// A Locker from New does not see conn's session events (zk.Connect hands
// them to whoever made conn). It learns that a lock was lost from the watch
// on the lock's node only: the node was deleted, the client reconnected and
// found its session expired, or conn was closed. While no server can be
// reached it cannot tell; a Locker from Dial can (see the package docs).
func New(conn *zk.Conn, opts Options) *Locker {
	if opts.Root == "" {
		opts.Root = "/seatlock/locks"
	}
	opts.Root = "/" + strings.Trim(opts.Root, "/")
	if opts.ACL == nil {
		opts.ACL = zk.WorldACL(zk.PermAll)
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	l := &Locker{
		conn:     conn,
		opts:     opts,
		done:     make(chan struct{}),
		orphaned: make(chan struct{}, 1),
		held:     make(map[*lock]struct{}),
	}
	l.wg.Add(1)
	go l.sweep()
	return l
}

// Dial connects to the ZooKeeper ensemble at servers ("host:port") with a
// session of sessionTimeout, waits until the session is established or ctx
// ends, and returns a Locker that owns the connection: Close closes it. The
// server may negotiate sessionTimeout into its own bounds (by default 2 to
// 20 ticks); ask for one inside them.
//
// connOpts are passed to zk.Connect (for example zk.WithLogInfo(false) or
// zk.WithDialer); the Locker reads the session events itself, so do not
// pass zk.WithEventCallback expecting to see every event there instead.
//
// A Locker from Dial follows the session: a holder whose client has been
// disconnected for sessionTimeout/3 declares its locks lost, because by
// then the server, which has not heard from it for about a full session
// timeout, may have expired the session and handed its keys on.
//
// When ctx ends before a session is established, Dial closes the
// connection (see Close: a few seconds at most, whatever the servers do)
// and returns an error wrapping ctx.Err().
func Dial(ctx context.Context, servers []string, sessionTimeout time.Duration, opts Options, connOpts ...func(*zk.Conn)) (*Locker, error) {
	conn, events, err := zk.Connect(servers, sessionTimeout, func(c *zk.Conn) {
		for _, o := range connOpts {
			o(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("zklock: connect to %q: %w", servers, err)
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = max(sessionTimeout, defaultCallTimeout)
	}
	l := New(conn, opts)
	l.owned = true
	l.grace = sessionTimeout / 3
	ready := make(chan struct{})
	l.wg.Add(1)
	go l.followSession(events, ready)
	select {
	case <-ready:
		return l, nil
	case <-ctx.Done():
		_ = l.Close()
		return nil, fmt.Errorf("zklock: no session with %q: %w", servers, ctx.Err())
	}
}

// Close stops the Locker's goroutines and waits for them. Every call of
// the Locker still waiting for ZooKeeper returns at once, with an error
// wrapping ErrNoAnswer. If the Locker came from Dial, Close also closes
// the connection: that ends the session, and ZooKeeper deletes every node
// of it at once, so locks still held are released (and reported lost to
// their holders).
//
// Close returns within a few seconds whatever the servers do: it waits
// that long at most for the client library to close the connection and
// to answer the calls in flight, and leaves them to end by themselves
// after that. A Locker from New does not wait for its calls in flight:
// they end when the library answers them, at the latest when the caller
// closes the connection. Close always returns nil.
func (l *Locker) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	if l.owned {
		// The library's Close answers the calls it has not sent, and
		// ends the event stream once its connection goes.
		l.calls.Add(1)
		go func() {
			defer l.calls.Done()
			l.conn.Close()
		}()
	}
	l.wg.Wait() // the Locker's own goroutines wait for no call any more
	if l.owned {
		waitFor(&l.calls, closeWait)
	}
	return nil
}

// followSession reads the connection's session events until the stream
// ends (the connection was closed) or the Locker is closed. It closes ready
// once the first session is established.
//
// A disconnection puts every held lock in doubt: the session lives on the
// server for the session timeout after the server last heard from us,
// and we cannot know when that was exactly. The client notices silence
// after 2/3 of the timeout at the latest, so a grace of 1/3 more is about
// the end of the session; if no reconnection to the same session came by
// then, the locks are declared lost. An expired session is a certain loss.
func (l *Locker) followSession(events <-chan zk.Event, ready chan struct{}) {
	defer l.wg.Done()
	var (
		doubt   *time.Timer // armed while disconnected; nil otherwise
		doubtC  <-chan time.Time
		started bool
	)
	stopDoubt := func() {
		if doubt != nil {
			doubt.Stop()
			doubt, doubtC = nil, nil
		}
	}
	defer stopDoubt()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.Type != zk.EventSession {
				continue
			}
			switch ev.State {
			case zk.StateHasSession:
				stopDoubt()
				if !started {
					started = true
					close(ready)
				}
			case zk.StateDisconnected:
				if doubt == nil {
					doubt = time.NewTimer(l.grace)
					doubtC = doubt.C
				}
			case zk.StateExpired:
				stopDoubt()
				l.loseAll(fmt.Errorf("%w: the ZooKeeper session expired", distlock.ErrLost))
			}
		case <-doubtC:
			doubt, doubtC = nil, nil
			l.loseAll(fmt.Errorf("%w: no ZooKeeper server reached for %v after a disconnection: the session has expired by now", distlock.ErrLost, l.grace))
		case <-l.done:
			return
		}
	}
}

// loseAll declares every held lock lost.
func (l *Locker) loseAll(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for lk := range l.held {
		lk.lose(cause)
	}
}

// Obtain takes every key, all or nothing, in sorted order, waiting as long
// as ctx allows. Duplicate keys are taken once.
//
// For each key it queues an ephemeral sequential node and waits until the
// node is the lowest of the key's queue, watching only the node right in
// front of its own. When ctx ends first, it deletes the nodes it created
// and returns errors.Join(distlock.ErrNotAcquired, ctx.Err()). An error
// from ZooKeeper (no server, a closed connection) is returned wrapped, and
// is not ErrNotAcquired; the nodes it created are deleted then too, now or
// by the Locker's sweeper once the connection is back.
//
// Every ZooKeeper call watches ctx too, and Options.CallTimeout: when ctx
// ends during a call the error wraps ErrNoAnswer and ctx.Err(), and
// ErrNotAcquired.
func (l *Locker) Obtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	return l.obtain(ctx, true, keys)
}

// TryObtain takes every key, all or nothing, without waiting in any queue:
// it returns an error wrapping distlock.ErrNotAcquired at once when a key is
// held or has waiters already, or an error from ZooKeeper.
func (l *Locker) TryObtain(ctx context.Context, keys ...string) (distlock.Lock, error) {
	return l.obtain(ctx, false, keys)
}

func (l *Locker) obtain(ctx context.Context, wait bool, keys []string) (distlock.Lock, error) {
	if len(keys) == 0 {
		return nil, errors.New("zklock: Obtain needs at least one key")
	}
	keys = slices.Clone(keys)
	slices.Sort(keys) // one global order: two multi-key Obtains cannot deadlock
	keys = slices.Compact(keys)
	lk := &lock{
		locker: l,
		keys:   keys,
		nodes:  make([]string, 0, len(keys)),
		State:  lockstate.State{Keys: keys, Fences: make([]int64, len(keys))},
	}
	lk.watching, lk.stopWatching = context.WithCancel(context.Background())
	if err := l.queue(ctx, wait, lk); err != nil {
		lk.stopWatching()
		l.abandon(lk.nodes, err)
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) && !errors.Is(err, distlock.ErrNotAcquired) {
			err = errors.Join(distlock.ErrNotAcquired, err)
		}
		return nil, err
	}
	return lk, nil
}

// queue takes the keys of lk one after the other, appending the nodes it
// creates to lk.nodes, then holds them.
func (l *Locker) queue(ctx context.Context, wait bool, lk *lock) error {
	for _, key := range lk.keys {
		dir, err := l.dir(key)
		if err != nil {
			return err
		}
		node, err := l.enqueue(ctx, dir)
		if err != nil {
			return err
		}
		lk.nodes = append(lk.nodes, node)
		if err := l.waitFirst(ctx, wait, key, node); err != nil {
			return err
		}
	}
	return l.hold(ctx, lk)
}

// hold watches the nodes of a lock whose every node is first in its queue,
// records their fencing tokens, and registers the lock for session events.
func (l *Locker) hold(ctx context.Context, lk *lock) error {
	watches := make([]<-chan zk.Event, len(lk.nodes))
	for i, node := range lk.nodes {
		exists, stat, ch, err := l.existsW(ctx, node)
		if err != nil {
			return fmt.Errorf("zklock: watch %s: %w", node, err)
		}
		if !exists {
			return fmt.Errorf("zklock: node %s of %q vanished while the other keys were taken", node, lk.keys[i])
		}
		// Czxid, not the sequence number: see "Fencing tokens" in doc.go.
		lk.Fences[i], watches[i] = stat.Czxid, ch
	}
	l.mu.Lock()
	l.held[lk] = struct{}{}
	l.mu.Unlock()
	for i, ch := range watches {
		lk.wg.Add(1)
		go lk.watch(lk.nodes[i], ch)
	}
	return nil
}

// nodePrefix starts the name of every lock node after its guid; the
// server appends a 10-digit sequence number.
const nodePrefix = "lock-"

// protectedPrefix marks a node name that carries its creator's guid, as in
// Curator and go-zookeeper: "_c_<guid>-lock-0000000042".
const protectedPrefix = "_c_"

// enqueue creates this Locker's ephemeral sequential node in dir and
// returns its path. The name carries a random guid, so that a create whose
// reply was lost with the connection can be found again: the session (and
// so the node) may well survive the disconnection, and a node nobody knows
// about would block the key for the whole life of the session.
//
// A key nobody holds or waits for has no directory (the last releaser
// deletes it), so enqueue creates it when the create finds it missing, and
// tries again. The directory can be deleted again in between, by a client
// that took and released the key meanwhile: each retry means somebody else
// got the key, and ctx bounds how long this one keeps trying.
//
// A create that enqueue stops waiting for (see call) may still be applied:
// the node it makes, or may have made, is then handed to the sweeper.
func (l *Locker) enqueue(ctx context.Context, dir string) (string, error) {
	guid := newGUID()
	path := dir + "/" + protectedPrefix + guid + "-" + nodePrefix
	for {
		session := l.conn.SessionID()
		create := func() (string, error) {
			return l.conn.Create(path, nil, zk.FlagEphemeral|zk.FlagSequence, l.opts.ACL)
		}
		abandoned := func(node string, err error) {
			switch {
			case err == nil:
				l.orphanNode(node, session)
			case errors.Is(err, zk.ErrConnectionClosed):
				l.orphan(orphan{dir: dir, guid: guid, session: session})
			}
		}
		node, err := call(ctx, l, create, abandoned)
		switch {
		case err == nil:
			return node, nil
		case errors.Is(err, zk.ErrNoNode):
			if ctx.Err() != nil {
				return "", errors.Join(distlock.ErrNotAcquired, ctx.Err())
			}
			if err := l.ensureDir(ctx, dir); err != nil {
				return "", err
			}
		case errors.Is(err, ErrNoAnswer):
			return "", fmt.Errorf("zklock: create in %s: %w", dir, err) // abandoned deals with the node
		case errors.Is(err, zk.ErrConnectionClosed):
			// The create may have been applied before the connection broke.
			if node, ok := l.findByGUID(ctx, dir, guid); ok {
				return node, nil
			}
			l.orphan(orphan{dir: dir, guid: guid, session: session})
			return "", fmt.Errorf("zklock: create in %s: %w", dir, err)
		default:
			return "", fmt.Errorf("zklock: create in %s: %w", dir, err)
		}
	}
}

// findByGUID looks in dir for the node named with guid.
func (l *Locker) findByGUID(ctx context.Context, dir, guid string) (string, bool) {
	children, err := l.children(ctx, dir)
	if err != nil {
		return "", false
	}
	for _, c := range children {
		if strings.HasPrefix(c, protectedPrefix+guid) {
			return dir + "/" + c, true
		}
	}
	return "", false
}

// persistent is the create flag of a node that is neither ephemeral nor
// sequential: it stays until deleted.
const persistent = 0

// ensureDir creates dir, the directory of a key, where missing. Root and
// the nodes above it are created too when dir cannot be for want of them,
// which happens once per Root: they are never deleted.
func (l *Locker) ensureDir(ctx context.Context, dir string) error {
	err := l.createDir(ctx, dir)
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: create %s: %w", dir, err)
	}
	path := ""
	for p := range strings.SplitSeq(strings.TrimPrefix(dir, "/"), "/") {
		path += "/" + p
		err := l.createDir(ctx, path)
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("zklock: create %s: %w", path, err)
		}
	}
	return nil
}

// createDir creates the persistent node path.
func (l *Locker) createDir(ctx context.Context, path string) error {
	return call0(ctx, l, func() error {
		_, err := l.conn.Create(path, nil, persistent, l.opts.ACL)
		return err
	})
}

// waitFirst waits until node is the first of its queue, watching only its
// predecessor: a release wakes one waiter, not the whole queue (no herd
// effect). Without wait it fails at once if node is not first.
func (l *Locker) waitFirst(ctx context.Context, wait bool, key, node string) error {
	dir, name := splitPath(node)
	for {
		children, err := l.children(ctx, dir)
		if err != nil {
			return fmt.Errorf("zklock: list %s: %w", dir, err)
		}
		slices.SortFunc(children, compareSeq)
		i := slices.Index(children, name)
		if i < 0 {
			return fmt.Errorf("zklock: node %s of %q vanished while waiting (session expired?)", node, key)
		}
		if i == 0 {
			return nil
		}
		if !wait {
			return fmt.Errorf("%w: %q is held", distlock.ErrNotAcquired, key)
		}
		exists, _, ch, err := l.existsW(ctx, dir+"/"+children[i-1])
		if err != nil {
			return fmt.Errorf("zklock: watch %s: %w", children[i-1], err)
		}
		if !exists {
			continue // gone between the listing and the watch: look again
		}
		select {
		case <-ch: // deleted, or the watch ended with the session: look again
		case <-ctx.Done():
			return errors.Join(distlock.ErrNotAcquired, ctx.Err())
		case <-l.done:
			return fmt.Errorf("zklock: wait for %q: %w", key, zk.ErrClosing)
		}
	}
}

// abandon deletes nodes of an Obtain that failed with err. A node that
// cannot be deleted now is left to the sweeper, and so is every node when
// err says that ZooKeeper does not answer: the deletes would wait for
// Options.CallTimeout before they failed too, and the Obtain with them.
func (l *Locker) abandon(nodes []string, err error) {
	if errors.Is(err, ErrNoAnswer) {
		session := l.conn.SessionID()
		for _, n := range nodes {
			l.orphanNode(n, session)
		}
		return
	}
	_, _ = l.removeAll(context.Background(), nodes)
}

// removeAll deletes nodes, then the directories they were in where no
// other node is queued, and returns how many nodes were gone already. Once
// a delete fails, ZooKeeper cannot be asked now, and the nodes left are
// handed to the sweeper without a call each: during an outage every call
// waits for the client to give up a round of its servers (a second or
// more), so a lock of ten keys would take ten times that to release.
func (l *Locker) removeAll(ctx context.Context, nodes []string) (gone int, err error) {
	for i, node := range nodes {
		session := l.conn.SessionID()
		err := l.delete(ctx, node)
		switch {
		case err == nil:
		case errors.Is(err, zk.ErrNoNode):
			gone++
		default:
			for _, n := range nodes[i:] {
				l.orphanNode(n, session)
			}
			return gone, fmt.Errorf("zklock: delete %s: %w (%d nodes left to the sweeper)", node, err, len(nodes)-i)
		}
	}
	for _, node := range nodes {
		dir, _ := splitPath(node)
		if l.removeDir(ctx, dir) != nil {
			break // ZooKeeper cannot be asked now; the directories can wait
		}
	}
	return gone, nil
}

// removeDir deletes the directory of a key unless a node is queued in it:
// the server refuses to delete a node that has children, so a waiter's
// node keeps the directory, and the last of the waiters deletes it. That
// keeps the tree from growing with every key ever locked. It returns an
// error only when ZooKeeper could not be asked; the directory is then left
// behind, which costs the ensemble a few bytes until the next release of
// its key deletes it.
func (l *Locker) removeDir(ctx context.Context, dir string) error {
	err := l.delete(ctx, dir)
	if err == nil || errors.Is(err, zk.ErrNotEmpty) || errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return fmt.Errorf("zklock: delete %s: %w", dir, err)
}

// orphanNode hands node, created in session, to the sweeper.
func (l *Locker) orphanNode(node string, session int64) {
	dir, name := splitPath(node)
	if guid, ok := guidOf(name); ok {
		l.orphan(orphan{dir: dir, guid: guid, session: session})
	}
}

func (l *Locker) orphan(o orphan) {
	l.mu.Lock()
	l.orphans = append(l.orphans, o)
	l.mu.Unlock()
	select {
	case l.orphaned <- struct{}{}:
	default: // the sweeper is awake already
	}
}

// sweep deletes orphan nodes, once they can be, every second, until the
// Locker is closed. An orphan of a session that ended is gone with it.
func (l *Locker) sweep() {
	defer l.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.orphaned:
		case <-tick.C:
		}
		l.mu.Lock()
		todo := l.orphans
		l.orphans = nil
		l.mu.Unlock()
		var left []orphan
		for _, o := range todo {
			if !l.sweepOne(o) {
				left = append(left, o)
			}
		}
		if len(left) > 0 {
			l.mu.Lock()
			l.orphans = append(l.orphans, left...)
			l.mu.Unlock()
		}
	}
}

// sweepOne deletes the node of o, and reports whether o is dealt with. Its
// calls end with the Locker, and after Options.CallTimeout each.
func (l *Locker) sweepOne(o orphan) bool {
	ctx := context.Background()
	if l.conn.SessionID() != o.session {
		// The session that owned the node ended, and the node with it.
		_ = l.removeDir(ctx, o.dir)
		return true
	}
	children, err := l.children(ctx, o.dir)
	if errors.Is(err, zk.ErrNoNode) {
		return true
	}
	if err != nil {
		return false
	}
	for _, c := range children {
		if strings.HasPrefix(c, protectedPrefix+o.guid) {
			if err := l.delete(ctx, o.dir+"/"+c); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return false
			}
		}
	}
	_ = l.removeDir(ctx, o.dir)
	return true
}

// children lists the children of path.
func (l *Locker) children(ctx context.Context, path string) ([]string, error) {
	return call(ctx, l, func() ([]string, error) {
		children, _, err := l.conn.Children(path)
		return children, err
	}, nil)
}

// delete deletes the node path, whatever its version.
func (l *Locker) delete(ctx context.Context, path string) error {
	return call0(ctx, l, func() error { return l.conn.Delete(path, -1) })
}

// exists tells whether path exists, with its stat.
func (l *Locker) exists(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return l.existsCall(ctx, path, false)
}

// existsW tells whether path exists, with its stat, and sets a watch on
// it: its channel gets the next change of path.
func (l *Locker) existsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	return l.existsCall(ctx, path, true)
}

// existsCall is exists, or existsW when watch is set.
func (l *Locker) existsCall(ctx context.Context, path string, watch bool) (bool, *zk.Stat, <-chan zk.Event, error) {
	type answer struct {
		exists bool
		stat   *zk.Stat
		ch     <-chan zk.Event
	}
	a, err := call(ctx, l, func() (answer, error) {
		if watch {
			exists, stat, ch, err := l.conn.ExistsW(path)
			return answer{exists, stat, ch}, err
		}
		exists, stat, err := l.conn.Exists(path)
		return answer{exists, stat, nil}, err
	}, nil)
	return a.exists, a.stat, a.ch, err
}

// dir returns the znode directory of key: Root, then the key escaped into
// one znode name.
func (l *Locker) dir(key string) (string, error) {
	if key == "" {
		return "", errors.New("zklock: empty key")
	}
	name := url.PathEscape(key) // no '/' left; readable for seat keys
	if strings.Trim(name, ".") == "" {
		name = strings.ReplaceAll(name, ".", "%2E") // "." and ".." are not node names
	}
	return l.opts.Root + "/" + name, nil
}

func splitPath(node string) (dir, name string) {
	i := strings.LastIndexByte(node, '/')
	return node[:i], node[i+1:]
}

// guidOf returns the guid in a protected node name.
func guidOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, protectedPrefix)
	if !ok || len(rest) < 32 {
		return "", false
	}
	return rest[:32], true
}

// seq returns the sequence number the server appended to a node name, or -1
// for a name that has none (a node that is not ours: it sorts first, and
// so blocks the key, which is the safe way to treat a stranger).
func seq(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if i < 0 || err != nil {
		return -1
	}
	return n
}

func compareSeq(a, b string) int {
	if c := cmp.Compare(seq(a), seq(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func newGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}
