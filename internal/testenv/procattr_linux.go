package testenv

import "syscall"

// dieWithParent makes the kernel kill a child process when the test binary
// dies, so that a test killed by -timeout or a signal leaves no server
// behind: t.Cleanup does not run then.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
