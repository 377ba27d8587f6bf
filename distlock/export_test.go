package distlock

import (
	"time"

	"github.com/seatlock/seatlock/distlock/internal/luascript"
)

// Hooks for the external tests of this package; they exist only in test
// builds.

// LockKeyForTest returns the Redis key that holds key's owner token.
func (r *Redis) LockKeyForTest(key string) string {
	lock, _ := r.names(key)
	return lock
}

// ChannelForTest returns the channel on which key's release is announced:
// the name of its lock key.
func (r *Redis) ChannelForTest(key string) string {
	lock, _ := r.names(key)
	return lock
}

// AcquireScriptHashForTest returns the SHA1 with which acquire.lua runs.
func AcquireScriptHashForTest() string { return acquireScript.Hash() }

// RefreshScriptHashForTest returns the SHA1 with which refresh.lua (in
// internal/luascript) runs.
func RefreshScriptHashForTest() string { return luascript.Refresh.Hash() }

// DeadlineForTest returns when lock, a lock of a Redis locker, is declared
// lost unless a renewal comes first: the end of its lease less the drift
// allowance and StopMargin.
func DeadlineForTest(lock Lock) time.Time {
	l := lock.(*redisLock)
	return l.r.watchdog.Deadline(&l.wd)
}

// FenceKeyForTest returns the Redis key of key's fence counter.
func (r *Redis) FenceKeyForTest(key string) string {
	_, fence := r.names(key)
	return fence
}
