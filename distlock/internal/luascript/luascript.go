// Package luascript holds the Lua scripts that more than one Redis backend
// runs, so that each exists once: the Redis backend in package distlock
// and Redlock, on each of its nodes, extend a lease and release a lock the
// same way.
//
// The scripts run with EVALSHA, falling back to EVAL (which caches them on
// the server) the first time a server has not seen them.
package luascript

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed refresh.lua
	refreshSource string

	//go:embed release.lua
	releaseSource string
)

// Refresh runs refresh.lua: it extends the lease of every lock key, but
// only if every one still holds the caller's owner token.
var Refresh = redis.NewScript(refreshSource)

// Release runs release.lua: it deletes the lock keys that still hold the
// caller's owner token, and wakes their waiters.
var Release = redis.NewScript(releaseSource)
