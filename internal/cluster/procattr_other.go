//go:build !linux

package cluster

import "syscall"

// dieWithParent has no portable equivalent outside Linux: attr is
// returned as it is, and Stop must run.
func dieWithParent(attr *syscall.SysProcAttr) *syscall.SysProcAttr { return attr }
