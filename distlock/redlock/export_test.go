package redlock

import (
	"time"

	"github.com/seatlock/seatlock/distlock"
)

// LockKeyForTest returns the Redis key, on every node, that holds key's
// owner token.
func (l *Locker) LockKeyForTest(key string) string { return l.lockKey(key) }

// FenceKeyForTest returns the Redis key, on every node, of key's fence
// counter.
func (l *Locker) FenceKeyForTest(key string) string { return l.fenceKey(key) }

// AcquireScriptHashForTest returns the SHA1 with which acquire.lua runs.
func AcquireScriptHashForTest() string { return acquireScript.Hash() }

// DeadlineForTest returns when l, a lock of a Locker, is declared lost
// unless a renewal reaches a quorum first: the end of its validity less
// StopMargin.
func DeadlineForTest(l distlock.Lock) time.Time {
	lk := l.(*lock)
	return lk.l.watchdog.Deadline(&lk.wd)
}
