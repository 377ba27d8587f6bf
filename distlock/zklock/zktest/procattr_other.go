//go:build !linux

package zktest

import "syscall"

// dieWithParent has no portable equivalent outside Linux: Stop is the only
// way the server ends there.
func dieWithParent() *syscall.SysProcAttr { return nil }
