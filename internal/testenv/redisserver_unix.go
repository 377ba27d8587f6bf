//go:build unix

package testenv

import (
	"syscall"
	"testing"
)

// Pause stops the server (SIGSTOP), as a hung host or a long GC pause
// would: its connections stay open and nothing answers. It returns the
// function that resumes it (SIGCONT), which t's cleanup also calls, before
// Stop kills it. Resuming twice is harmless.
func (s *RedisServer) Pause(t testing.TB) (resume func()) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("pause redis-server at %s: %v", s.Addr, err)
	}
	resume = func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }
	t.Cleanup(resume)
	return resume
}
