//go:build !linux

package testenv

import "syscall"

// dieWithParent has no portable equivalent outside Linux; t.Cleanup stops
// the children of a test that ends normally.
func dieWithParent() *syscall.SysProcAttr { return nil }
