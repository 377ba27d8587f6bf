package cluster

import "syscall"

// dieWithParent makes the kernel kill a child when its parent dies, so
// that a crashed caller leaves no server behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
