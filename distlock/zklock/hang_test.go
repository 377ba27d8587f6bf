package zklock_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/distlock/zklock"
	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/wait"
)

// noHang bounds an operation that must end by itself within a second or
// two: far more than any load stretches that, and less than the client
// library's own bound on a handshake with a server that does not answer
// (ten read timeouts: almost seven session timeouts, 27 s for the 4 s
// session of the test server), so that waiting for the library fails the
// test instead of passing slowly.
const noHang = 20 * time.Second

// silentServer is a "ZooKeeper server" that accepts connections and never
// answers, not even the handshake: a server still starting, or stuck.
type silentServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex // protects conns: the accepting goroutine appends
	conns []net.Conn
}

// newSilentServer starts a silentServer on a free port, stopped when t
// ends.
func newSilentServer(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener was closed
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			_ = c.Close()
		}
	})
	return s
}

func (s *silentServer) Addr() string { return s.ln.Addr().String() }

// Accepted returns how many connections the server took.
func (s *silentServer) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// returns runs f and returns its error, failing t, named after what, when
// f has not returned within noHang.
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	got := make(chan error, 1)
	go func() { got <- f() }()
	return wait.Recv(t, got, noHang, what+" to return")
}

// A server that takes the connection and never answers the handshake
// makes the client library wait ten read timeouts, and then try again:
// Dial ends with its ctx all the same, with an error that says so.
func TestDialServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err := returns(t, "Dial with a 1s context to a server that never answers", func() error {
		l, err := zklock.Dial(ctx, []string{srv.Addr()}, 10*time.Second, zklock.Options{}, zk.WithLogger(quiet{}))
		if err == nil {
			_ = l.Close()
		}
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if srv.Accepted() == 0 {
		t.Fatal("the client never connected to the silent server: the test tested nothing")
	}
}

// Every call of a Locker on a client stuck in its handshake ends with its
// ctx, with Options.CallTimeout when ctx has no end, and with Close.
func TestCallsToServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	srv := newSilentServer(t)
	conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	wait.For(t, noHang, "the client connects to the silent server", func() bool { return srv.Accepted() > 0 })

	t.Run("Obtain ends with its ctx", func(t *testing.T) {
		locker := zklock.New(conn, zklock.Options{Root: testRoot(t), CallTimeout: time.Hour})
		t.Cleanup(func() { _ = locker.Close() })
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := returns(t, "Obtain with a 1s context", func() error {
			_, err := locker.Obtain(ctx, "A1")
			return err
		})
		if !errors.Is(err, distlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, zklock.ErrNoAnswer) {
			t.Fatalf("Obtain = %v, want ErrNotAcquired, ErrNoAnswer and context.DeadlineExceeded", err)
		}
	})
	t.Run("TryObtain ends after CallTimeout", func(t *testing.T) {
		locker := zklock.New(conn, zklock.Options{Root: testRoot(t), CallTimeout: time.Second})
		t.Cleanup(func() { _ = locker.Close() })
		err := returns(t, "TryObtain without a deadline, with a CallTimeout of 1s", func() error {
			_, err := locker.TryObtain(context.Background(), "A1")
			return err
		})
		if !errors.Is(err, zklock.ErrNoAnswer) {
			t.Fatalf("TryObtain = %v, want ErrNoAnswer", err)
		}
	})
	t.Run("Close ends the calls", func(t *testing.T) {
		locker := zklock.New(conn, zklock.Options{Root: testRoot(t), CallTimeout: time.Hour})
		obtained := make(chan error, 1)
		go func() {
			_, err := locker.Obtain(context.Background(), "A1")
			obtained <- err
		}()
		wait.For(t, noHang, "the Obtain waits for ZooKeeper", func() bool { return locker.WaitingForTest() == 1 })
		_ = returns(t, "Close", locker.Close)
		err := wait.Recv(t, obtained, noHang, "an Obtain without a deadline to return after Close")
		if !errors.Is(err, zklock.ErrNoAnswer) || !errors.Is(err, zk.ErrClosing) {
			t.Fatalf("Obtain after Close = %v, want ErrNoAnswer and zk.ErrClosing", err)
		}
	})
}

// A holder whose client reconnects to a server that never answers (the
// connection is diverted to one) can still Refresh, Release and Close:
// each ends with its ctx or CallTimeout, and the nodes that could not be
// deleted are gone once a real server is reached again.
func TestHeldLockWhenServerStopsAnswering(t *testing.T) {
	t.Parallel()
	addr := zktest.Addr(t, server, serverErr)
	srv := newSilentServer(t)
	var c cutter
	// The longest session the test server grants: the library then waits
	// longest for a handshake, 27 s, more than noHang.
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), c.option())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	wait.For(t, patience, "a session with the test server", func() bool { return conn.State() == zk.StateHasSession })
	// New, not Dial: the Locker does not follow the session, so nothing
	// declares the lock lost while the client is stuck, and Refresh asks
	// the server.
	locker := zklock.New(conn, zklock.Options{Root: testRoot(t), CallTimeout: time.Second})
	t.Cleanup(func() { _ = locker.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	lock, err := locker.Obtain(ctx, "A1")
	if err != nil {
		t.Fatal(err)
	}

	c.Divert(srv.Addr())
	wait.For(t, patience, "the client reconnects to the silent server", func() bool { return srv.Accepted() > 0 })

	rctx, rcancel := context.WithTimeout(t.Context(), time.Second)
	defer rcancel()
	// Its ctx and CallTimeout end together: either may be the one.
	err = returns(t, "Refresh with a 1s context", func() error { return lock.Refresh(rctx) })
	if !errors.Is(err, zklock.ErrNoAnswer) {
		t.Fatalf("Refresh = %v, want ErrNoAnswer", err)
	}
	err = returns(t, "Release without a deadline, with a CallTimeout of 1s", func() error {
		return lock.Release(context.Background())
	})
	if !errors.Is(err, zklock.ErrNoAnswer) {
		t.Fatalf("Release = %v, want ErrNoAnswer", err)
	}

	c.Divert("")
	look := connect(t)
	dir := locker.DirForTest("A1")
	wait.For(t, patience, dir+" is empty once a server answers again", func() bool {
		children, _, err := look.Children(dir)
		return errors.Is(err, zk.ErrNoNode) || err == nil && len(children) == 0
	})
	_ = returns(t, "Close", locker.Close)
}

// gate is a zk.Dialer whose connections hold what they read from the
// server while the gate is held: the server gets and applies every call,
// but its answers reach the client only once the gate opens.
type gate struct {
	mu   sync.Mutex // protects open
	open chan struct{}
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return gatedConn{c, g}, nil
}

// Hold keeps the answers from the client until Open.
func (g *gate) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = make(chan struct{})
}

// Open hands the client what it held, and what comes after.
func (g *gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	<-open
}

type gatedConn struct {
	net.Conn
	g *gate
}

func (c gatedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.g.wait()
	return n, err
}

// An Obtain that gives up while its create is on its way lets go of the
// node that the create makes anyway: once the answer comes, the sweeper
// deletes the node, which would otherwise block the key for as long as
// the session lives.
func TestObtainGivenUpLeavesNoNode(t *testing.T) {
	t.Parallel()
	addr := zktest.Addr(t, server, serverErr)
	g := newGate()
	t.Cleanup(g.Open) // no read of the client's stays held
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(quiet{}), zk.WithDialer(g.dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	wait.For(t, patience, "a session with the test server", func() bool { return conn.State() == zk.StateHasSession })
	root := testRoot(t)
	locker := zklock.New(conn, zklock.Options{Root: root, CallTimeout: time.Hour})
	t.Cleanup(func() { _ = locker.Close() })
	// A holder of the key, so that its directory exists and the create
	// makes a node (in the queue behind the holder's).
	holder, err := dial(t, root).Obtain(t.Context(), "A1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Release(context.Background()) })

	g.Hold()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	err = returns(t, "Obtain with a 1s context while the answers are held", func() error {
		_, err := locker.Obtain(ctx, "A1")
		return err
	})
	if !errors.Is(err, zklock.ErrNoAnswer) {
		t.Fatalf("Obtain = %v, want ErrNoAnswer", err)
	}
	g.Open()

	look := connect(t)
	dir := locker.DirForTest("A1")
	waitChildren(t, look, dir, 1) // the holder's node only
	if conn.State() != zk.StateHasSession {
		t.Fatalf("the session is %v: its end, not the sweeper, may have deleted the node", conn.State())
	}
}
