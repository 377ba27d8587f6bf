//go:build !linux

package cluster

import "syscall"

// dieWithParent has no portable equivalent outside Linux: Stop must run.
func dieWithParent() *syscall.SysProcAttr { return nil }
