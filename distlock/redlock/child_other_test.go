//go:build !linux

package redlock_test

import "os/exec"

// dieWithParent does nothing here: only Linux can tie a child's life to its
// parent's. A test binary killed before its cleanups leaves its
// redis-server processes running.
func dieWithParent(*exec.Cmd) {}
