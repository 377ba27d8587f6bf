package zktest

import "syscall"

// dieWithParent makes the kernel kill the server when the test binary
// dies, even by SIGKILL, so that no JVM outlives its test.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
