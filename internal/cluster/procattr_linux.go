package cluster

import "syscall"

// dieWithParent returns attr (or new attributes, when nil) set so that the
// kernel kills the child when its parent dies, and a crashed caller
// leaves no server behind. Strictly, when the parent's thread that
// started it ends; Go's runtime does not end its threads but for a
// goroutine that exits locked to one, which this package never does.
func dieWithParent(attr *syscall.SysProcAttr) *syscall.SysProcAttr {
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Pdeathsig = syscall.SIGKILL
	return attr
}
