package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNoPostgres is returned by StartPostgres when Debian's postgresql
// package (/usr/lib/postgresql/*/bin/initdb) is not installed.
var ErrNoPostgres = errors.New("cluster: no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")

// Postgres is a Postgres cluster of its own (initdb, pg_ctl) on a port and
// in a directory of its own: stopping it is an outage nobody else sees.
// Run as root, the server runs as the postgres user, since Postgres
// refuses to run as root.
type Postgres struct {
	URL  string // of the database postgres, user postgres, no password
	Port int

	bin string // directory of initdb and pg_ctl
	dir string
}

// StartPostgres creates a cluster in a new temporary directory and starts
// it. Remove stops it and deletes its files.
func StartPostgres() (*Postgres, error) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		return nil, ErrNoPostgres
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "seatlock-pg-")
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
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

// Run runs one of the cluster's programs (psql, pg_ctl), as the postgres
// user when the caller is root.
func (c *Postgres) Run(prog string, args ...string) error {
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: %s %v: %w\n%s", prog, args, err, out)
	}
	return nil
}

// Start starts the server and returns once it accepts connections.
func (c *Postgres) Start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", c.Port, c.dir)
	return c.Run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "-t", "60", "start")
}

// Stop stops the server at once, without a checkpoint: the nearest thing
// to pulling its plug that leaves the machine up. Stopping a stopped
// server does nothing.
func (c *Postgres) Stop() error {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err != nil {
		return nil
	}
	return c.Run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
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
