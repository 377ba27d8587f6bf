package distlock

// Hooks for the external tests of this package; they exist only in test
// builds.

// LockKeyForTest returns the Redis key that holds key's owner token.
func (r *Redis) LockKeyForTest(key string) string {
	lock, _, _ := r.names(key)
	return lock
}

// ChannelForTest returns the channel on which key's release is announced.
func (r *Redis) ChannelForTest(key string) string {
	_, _, channel := r.names(key)
	return channel
}

// RefreshScriptHashForTest returns the SHA1 with which refresh.lua (in
// internal/luascript) runs.
func RefreshScriptHashForTest() string { return refreshScript.Hash() }
