package cluster

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// process is one child process and the goroutine that waits for it.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has ended
}

// startProcess starts cmd and a goroutine, owned by the process, that
// waits for it; kill waits for that goroutine.
func startProcess(name string, cmd *exec.Cmd) (*process, error) {
	cmd.SysProcAttr = dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// errStillRunning is returned by kill when a process outlives SIGKILL for
// 10 s, which only a process stuck in the kernel does.
var errStillRunning = errors.New("cluster: process still running after SIGKILL")

// kill ends the process with SIGKILL, as a crash would (a stopped process
// too), and waits for it to be gone. Killing a process that has ended
// does nothing.
func (p *process) kill() error {
	if p == nil {
		return nil
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s pid %d: %w", p.name, p.cmd.Process.Pid, errStillRunning)
	}
}

// signal sends sig to the process.
func (p *process) signal(sig syscall.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("signal %v to %s: %w", sig, p.name, err)
	}
	return nil
}

// running reports whether the process has not ended.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// loopback is host:port on 127.0.0.1.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// poll calls ok every 50 ms until it returns true or timeout passes; the
// error names what did not happen. Each then, if given, runs once ok is
// true and its error is poll's.
func poll(timeout time.Duration, what string, ok func() bool, then ...func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			for _, f := range then {
				if err := f(); err != nil {
					return err
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: %s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
