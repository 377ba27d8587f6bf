// Package keyedlock is yours to write: a keyed mutex, one lock per key
// (docs/workshop/03-keyed-lock.md, "Write it yourself"). Fill in the TODOs,
// then grade it:
//
//	GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/keyedlock
//
// The grader (keyedlock/keyedlocktest) runs in stages and stops at the first
// one that fails, saying what it asks for:
//
//  1. exclusion: two goroutines never hold one key; keys never wait for
//     each other. A map of *sync.Mutex guarded by a mutex passes.
//  2. forgetting: a key nobody holds or waits for leaves the map (Len 0).
//     Deleting the entry in Unlock passes the Len check and breaks
//     exclusion: find out why, and how counting fixes it.
//  3. cancellation: Lock gives up when its context ends, holding nothing.
//     A sync.Mutex cannot be waited for with a context; a channel can.
//
// Then run the API with it (strategy lab-keyed) and let loadgen judge it.
package keyedlock

import (
	"context"
	"errors"
)

// errTODO is what the parts still to write return.
var errTODO = errors.New("keyedlock: not written yet (a TODO in docs/workshop/write/keyedlock)")

// Mutex is a set of locks, one per key. The zero value must be ready to
// use.
type Mutex struct {
	// TODO: a map from key to its lock, and a mutex that guards the map.
}

// Lock waits until it holds key, or until ctx ends: then it returns
// ctx.Err() and holds nothing.
func (m *Mutex) Lock(ctx context.Context, key string) error {
	// TODO: find or make the key's lock under the map's mutex, then wait
	// for it outside that mutex, or for ctx.Done().
	return errTODO
}

// Unlock releases key, which the caller holds.
func (m *Mutex) Unlock(key string) {
	// TODO: release the key's lock; forget the key once nobody holds or
	// waits for it.
}

// Len returns the number of keys that have a holder or a waiter.
func (m *Mutex) Len() int {
	// TODO: the size of the map.
	return 0
}
