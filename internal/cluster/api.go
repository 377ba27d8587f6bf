package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// API is one API instance: the cmd/api binary as a child process, on a
// port it keeps across restarts.
type API struct {
	Name string // "api-0", ...
	URL  string // http://127.0.0.1:port

	bin  string
	env  []string
	log  *tail
	proc *process
}

func newAPI(name, bin string, env map[string]string) (*API, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	a := &API{Name: name, URL: "http://" + loopback(port), bin: bin, log: &tail{max: 64 << 10}}
	// Only what the cluster gives it: the caller's REDIS_URL or
	// DATABASE_URL must not leak into the instance.
	a.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "ADDR=" + loopback(port)}
	for k, v := range env {
		a.env = append(a.env, k+"="+v)
	}
	return a, nil
}

// Start starts the instance and returns once /healthz answers 200, or an
// error if it exits or does not answer within a minute.
func (a *API) Start(ctx context.Context) error {
	cmd := exec.Command(a.bin)
	cmd.Env = a.env
	cmd.Stdout, cmd.Stderr = a.log, a.log
	p, err := startProcess(a.Name, cmd)
	if err != nil {
		return err
	}
	a.proc = p
	hc := &http.Client{Timeout: time.Second}
	return poll(time.Minute, a.Name+" answers /healthz", func() bool {
		if !p.running() || ctx.Err() != nil {
			return true
		}
		res, err := hc.Get(a.URL + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, func() error {
		if !p.running() {
			return fmt.Errorf("cluster: %s exited at start:\n%s", a.Name, a.log.String())
		}
		return ctx.Err()
	})
}

// Kill ends the instance with SIGKILL, a crash: nothing is drained.
func (a *API) Kill() error { return a.proc.kill() }

// Pause stops the instance with SIGSTOP: it holds its connections and
// locks and answers nothing, as a long garbage-collection pause or a
// frozen VM does.
func (a *API) Pause() error { return a.proc.signal(syscall.SIGSTOP) }

// Resume continues a paused instance (SIGCONT).
func (a *API) Resume() error { return a.proc.signal(syscall.SIGCONT) }

// Running reports whether the instance's process is up.
func (a *API) Running() bool { return a.proc != nil && a.proc.running() }

// Log returns the end of the instance's output, over its restarts.
func (a *API) Log() string { return a.log.String() }

// tail keeps the last max bytes written to it.
type tail struct {
	max int
	mu  sync.Mutex // protects buf: written by the process's output copier, read by anyone
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
