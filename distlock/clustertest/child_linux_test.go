package clustertest_test

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd's process when the test binary
// dies, so that a test killed by -timeout or a signal leaves no
// redis-server behind: t.Cleanup does not run then.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
