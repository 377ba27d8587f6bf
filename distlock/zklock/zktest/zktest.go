// Package zktest starts a throwaway ZooKeeper server for tests: a real one,
// from Debian's zookeeper package, on a free port of 127.0.0.1 with its data
// in a temporary directory.
//
// ZooKeeper is a JVM and takes a moment to start, so a test binary starts
// one server in TestMain and its tests share it, each under a root path of
// its own:
//
//	var server *zktest.Server
//	var serverErr error
//
//	func TestMain(m *testing.M) {
//		server, serverErr = zktest.Start()
//		code := m.Run()
//		if server != nil {
//			server.Stop()
//		}
//		os.Exit(code)
//	}
//
//	func TestSomething(t *testing.T) {
//		addr := zktest.Addr(t, server, serverErr) // skips if not installed
//		...
//	}
//
// Install the server with `apt-get install zookeeper` (it brings a Java
// runtime). The server is started directly with java, never through
// systemd: ZooKeeperServerMain and the classpath of the Debian package.
package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
)

// Jar is where Debian's zookeeper package installs the server. Its manifest
// lists the libraries it needs, so it is the whole classpath.
const Jar = "/usr/share/java/zookeeper.jar"

// TickTime is the server's tick: sessions may last from 2 to 150 ticks
// (400ms to 30s), so that tests can use short sessions.
const TickTime = 200 * time.Millisecond

// ErrNotInstalled is returned by Start when java or the ZooKeeper jar is
// missing.
var ErrNotInstalled = errors.New("zktest: ZooKeeper is not installed (apt-get install zookeeper)")

// Server is a running ZooKeeper server. Stop it when done.
type Server struct {
	// Addr is the client address, "127.0.0.1:port".
	Addr string

	dir  string
	java string
	cmd  *exec.Cmd
	exit chan error // receives cmd.Wait's result; holds it once it came
}

// Start starts a standalone server on a free port with its data in a new
// temporary directory, and waits until it answers "ruok". It returns
// ErrNotInstalled when ZooKeeper is not installed.
func Start() (*Server, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	if _, err := os.Stat(Jar); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotInstalled, err)
	}
	// A free port can be taken by someone else before the server binds it:
	// try a few.
	for attempt := 1; ; attempt++ {
		s, err := start(java)
		if err == nil || attempt == 3 {
			return s, err
		}
	}
}

func start(java string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "zktest-")
	if err != nil {
		return nil, err
	}
	cfg := strings.Join([]string{
		fmt.Sprintf("tickTime=%d", TickTime.Milliseconds()),
		"dataDir=" + filepath.Join(dir, "data"),
		fmt.Sprintf("clientPort=%d", port),
		"clientPortAddress=127.0.0.1",
		fmt.Sprintf("minSessionTimeout=%d", 2*TickTime.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", 150*TickTime.Milliseconds()),
		"admin.enableServer=false",
		"4lw.commands.whitelist=ruok,srvr,stat",
		"forceSync=no", // a test server need not survive a power cut
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), dir: dir, java: java}
	if err := s.launch(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// launch runs the server process on s's configuration and data, and waits
// until it answers "ruok". When it does not, the process is gone when
// launch returns.
func (s *Server) launch() error {
	logFile, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(s.java,
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", // start fast, stay small
		"-cp", Jar, "org.apache.zookeeper.server.ZooKeeperServerMain",
		filepath.Join(s.dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("zktest: start java: %w", err)
	}
	s.cmd, s.exit = cmd, make(chan error, 1)
	exit := s.exit
	go func() { exit <- cmd.Wait() }() // ends when the process does; kill waits for it

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if s.ruok() {
			return nil
		}
		select {
		case err := <-s.exit:
			s.exit <- err // for kill
			return fmt.Errorf("zktest: server exited (%v): %s", err, s.log())
		case <-time.After(50 * time.Millisecond):
		}
	}
	s.kill()
	return fmt.Errorf("zktest: server did not answer on %s within 30s: %s", s.Addr, s.log())
}

// ruok reports whether the server answers the "ruok" four-letter word.
func (s *Server) ruok() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "imok")
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Stop kills the server, waits for it to exit and removes its data.
func (s *Server) Stop() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}

// Restart kills the server (SIGKILL, as a crash would) and starts it again
// on the same port with the same data, as a restarted server comes back:
// its sessions and their ephemeral nodes are restored from its log, and a
// client that reconnects within its session timeout keeps them. It returns
// once the server answers "ruok", or an error, the server then stopped.
func (s *Server) Restart() error {
	s.kill()
	return s.launch()
}

// kill ends the server process, if it runs, and waits for it.
func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	err := <-s.exit
	s.exit <- err // a second kill returns at once
}

// Addr returns the address of srv for t, or skips t with a message that
// says how to install ZooKeeper when err (from Start) says so. Under
// REQUIRE_INTEGRATION=1 it fails t instead.
func Addr(t testing.TB, srv *Server, err error) string {
	t.Helper()
	if err == nil {
		return srv.Addr
	}
	msg := fmt.Sprintf("no ZooKeeper for integration tests: %v", err)
	if errors.Is(err, ErrNotInstalled) {
		testenv.Unavailable(t, testenv.Need{What: "ZooKeeper", Install: "apt-get install -y zookeeper"}, msg)
	}
	t.Fatal(msg)
	return ""
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
