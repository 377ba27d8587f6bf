// Package luascript holds the Lua scripts that more than one Redis backend
// runs, so that each exists once: the Redis backend in package distlock
// and Redlock, on each of its nodes, extend a lease and release a lock the
// same way.
package luascript

import _ "embed"

// Refresh is the source of refresh.lua: it extends the lease of every lock
// key, but only if every one still holds the caller's owner token.
//
//go:embed refresh.lua
var Refresh string

// Release is the source of release.lua: it deletes the lock keys that
// still hold the caller's owner token, and wakes their waiters.
//
//go:embed release.lua
var Release string
