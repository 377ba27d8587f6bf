package zklock_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/distlock/zklock"
	"github.com/seatlock/seatlock/distlock/zklock/zktest"
	"github.com/seatlock/seatlock/internal/testenv"
)

// One ZooKeeper server for the whole test binary: a JVM is slow to start.
// Every test works under a root path of its own.
var (
	server    *zktest.Server
	serverErr error
)

// TestMain starts the server, runs the tests, and says at the end when
// some were skipped for want of ZooKeeper, and how to run them.
func TestMain(m *testing.M) {
	server, serverErr = zktest.Start()
	code := testenv.Run(m)
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

// sessionTimeout is short, so that expiry tests are quick; the server
// grants it (its tick is 200ms).
const sessionTimeout = 2 * time.Second

// patience bounds every wait for something the server will do (start a
// session, expire one, delete a node): generous, because a loaded machine
// stretches each of them, and a wait that ends early fails the test.
const patience = 30 * time.Second

// testRoot returns a root path of t's own.
func testRoot(t testing.TB) string {
	t.Helper()
	return "/seatlock-test/" + uuid.NewString()
}

// quiet keeps go-zookeeper's reconnection messages out of the test output.
type quiet struct{}

func (quiet) Printf(string, ...any) {}

// dial returns a Locker on the test server under root, with a session of
// its own (as a separate process would have), closed when t ends.
func dial(t testing.TB, root string, connOpts ...func(*zk.Conn)) *zklock.Locker {
	t.Helper()
	addr := zktest.Addr(t, server, serverErr)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	connOpts = append([]func(*zk.Conn){zk.WithLogger(quiet{})}, connOpts...)
	l, err := zklock.Dial(ctx, []string{addr}, sessionTimeout, zklock.Options{Root: root}, connOpts...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// connect returns a plain connection to the test server, closed when t
// ends, for looking at the znodes from outside.
func connect(t testing.TB) *zk.Conn {
	t.Helper()
	addr := zktest.Addr(t, server, serverErr)
	conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatalf("zk.Connect: %v", err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// cutter is a zk.Dialer whose connections the test can cut at once, as a
// crash or a network partition would, and keep cut: no close request
// reaches the server, which keeps the session until it expires.
//
// While cut, the client dials once per round of its servers (one server
// here), a second apart, and fails the calls that waited on that round:
// Dials counts the rounds.
type cutter struct {
	mu    sync.Mutex // protects the fields below: the client dials from a goroutine of its own
	cut   bool
	to    string // where Divert sends new connections; "" for where asked
	conns []net.Conn
	dials int
}

func (c *cutter) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials++
	if c.cut {
		return nil, fmt.Errorf("cutter: %s is cut off", addr)
	}
	if c.to != "" {
		addr = c.to
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

// Cut closes every connection and refuses new ones.
func (c *cutter) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	c.closeAll()
}

// Dials returns how many times the client dialled.
func (c *cutter) Dials() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// Drop closes every connection but refuses no new one, as a reset by a
// router would: the client's next dial reconnects it to its session.
func (c *cutter) Drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeAll()
}

// closeAll closes every connection; c.mu is held.
func (c *cutter) closeAll() {
	for _, conn := range c.conns {
		_ = conn.Close()
	}
	c.conns = nil
}

// Divert closes every connection and sends the new ones to addr instead,
// or to where the client asks again when addr is "".
func (c *cutter) Divert(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.to = addr
	c.closeAll()
}

// Heal lets the client connect again.
func (c *cutter) Heal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = false
}

func (c *cutter) option() func(*zk.Conn) { return zk.WithDialer(c.dial) }
