package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNoPostgres is returned by StartPostgres when Debian's postgresql
// package (/usr/lib/postgresql/*/bin/initdb) is not installed.
var ErrNoPostgres = errors.New("cluster: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")

// Postgres is a Postgres cluster of its own (initdb, then the server) on a
// port and in a directory of its own: stopping it is an outage nobody
// else sees. The server is a child process, like every other server of
// the package (not pg_ctl's daemon), so that it dies with its caller.
// Run as root, the server runs as the postgres user, since Postgres
// refuses to run as root.
type Postgres struct {
	URL  string // of the database postgres, user postgres, no password
	Port int

	bin string // directory of initdb and postgres
	dir string

	// mu protects server: the postmaster while it runs, nil while the
	// cluster is stopped. Start and Stop hold it throughout, so a restart
	// never sees a server half started.
	mu     sync.Mutex
	server *process
}

// StartPostgres creates a cluster in a new temporary directory (TempDir's,
// so that RemoveOrphans finds it when its caller is killed) and starts it.
// Remove stops it and deletes its files.
func StartPostgres() (*Postgres, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, ErrNoPostgres
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := TempDir("pg-")
	if err != nil {
		return nil, err
	}
	c := &Postgres{bin: filepath.Dir(bins[len(bins)-1]), dir: dir, Port: port}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("cluster: chown %s to postgres: %w: %s", dir, err, out)
		}
	}
	if err := c.Run("initdb", "-D", c.data(), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

func (c *Postgres) data() string { return filepath.Join(c.dir, "data") }

// Run runs one of the cluster's programs (psql, initdb), as the postgres
// user when the caller is root, and waits for it.
func (c *Postgres) Run(prog string, args ...string) error {
	cmd, err := c.command(prog, args...)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: %s %v: %w\n%s", prog, args, err, out)
	}
	return nil
}

// command returns a command of one of the cluster's programs, which runs
// as the postgres user when the caller is root.
func (c *Postgres) command(prog string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("cluster: run %s as postgres: %w", prog, err)
		}
		uid, uerr := strconv.ParseUint(u.Uid, 10, 32)
		gid, gerr := strconv.ParseUint(u.Gid, 10, 32)
		if uerr != nil || gerr != nil {
			return nil, fmt.Errorf("cluster: user postgres has uid %q, gid %q", u.Uid, u.Gid)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	return cmd, nil
}

// Start starts the server, unless it runs already, and returns once it
// accepts connections. The server is the postmaster itself, a child of
// the caller that the kernel kills when the caller dies (dieWithParent);
// its own children end when they find it gone.
func (c *Postgres) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server != nil && c.server.running() {
		return nil
	}
	cmd, err := c.command("postgres", "-D", c.data(), "-p", strconv.Itoa(c.Port), "-k", c.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=100")
	if err != nil {
		return err
	}
	logPath := filepath.Join(c.dir, "log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	server, err := startProcess("postgres", cmd)
	_ = logFile.Close() // the server has its own descriptor
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	c.server = server
	err = poll(60*time.Second, "postgres accepts connections", func() bool {
		return !server.running() || c.ready(server.cmd.Process.Pid)
	})
	if err == nil && !server.running() {
		err = errors.New("cluster: postgres exited while starting")
	}
	if err != nil {
		_ = server.kill()
		c.server = nil
		out, _ := os.ReadFile(logPath)
		return fmt.Errorf("%w\n%s", err, out)
	}
	return nil
}

// ready reports whether the postmaster with the pid says it accepts
// connections: postmaster.pid names it on its first line, and its status
// line, which pg_ctl -w reads too, says "ready".
func (c *Postgres) ready(pid int) bool {
	file, err := os.ReadFile(filepath.Join(c.data(), "postmaster.pid"))
	if err != nil {
		return false
	}
	const statusLine = 8 // LOCK_FILE_LINE_PM_STATUS
	lines := strings.Split(string(file), "\n")
	return len(lines) >= statusLine && lines[0] == strconv.Itoa(pid) && strings.TrimSpace(lines[statusLine-1]) == "ready"
}

// Stop stops the server at once, without a checkpoint (SIGQUIT, Postgres's
// immediate shutdown): the nearest thing to pulling its plug that leaves
// the machine up. It kills a server that takes more than 30 s. Stopping a
// stopped server does nothing.
func (c *Postgres) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	server := c.server
	if server == nil {
		return nil
	}
	c.server = nil
	_ = server.signal(syscall.SIGQUIT) // fails only when it has ended already
	select {
	case <-server.exited:
		return nil
	case <-time.After(30 * time.Second):
		return server.kill()
	}
}

// Restart stops the server at once and starts it again.
func (c *Postgres) Restart() error {
	if err := c.Stop(); err != nil {
		return err
	}
	return c.Start()
}

// Remove stops the server and deletes its files.
func (c *Postgres) Remove() error {
	err := c.Stop()
	return errors.Join(err, os.RemoveAll(c.dir))
}
