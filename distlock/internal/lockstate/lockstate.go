// Package lockstate is what every distlock backend's lock shares: the keys
// it holds with their fencing tokens, whether it is held, lost or released,
// and the helpers every Obtain uses (the owner token, the backoff between
// attempts, how a holder counts a lease).
//
// A backend embeds State in its lock, which gives the lock Token, Lost
// and Err, and keeps for itself only what is specific to it: how it
// acquires, renews, watches and releases. The package is internal so that
// the distlock API stays the Locker and Lock interfaces; a backend outside
// this module implements them directly.
package lockstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"sync"
	"time"
)

// State is the state of one acquisition. Its zero value is a held lock
// with no keys; Keys and Fences are set before the lock is handed to the
// caller and never change after.
//
// State keeps one rule for every backend: Lost is closed exactly when Err
// wraps distlock.ErrLost, and a lock released first is never lost after.
// Its mutex protects only its own fields: a backend whose other fields
// change together with the state (timers, files) holds its own mutex
// around Lose and MarkReleased, and State's is taken inside it.
type State struct {
	Keys   []string // the caller's keys, without duplicates
	Fences []int64  // Fences[i] is the fencing token of Keys[i]; 0 without fencing

	mu       sync.Mutex
	lost     chan struct{} // made on first use, closed once by Lose
	err      error         // nil while held; wraps ErrLost once lost; ErrNotHeld once released
	released bool
}

// Token returns the fencing token issued for key by this acquisition, or 0
// if key is not part of the lock.
func (s *State) Token(key string) int64 {
	if i := slices.Index(s.Keys, key); i >= 0 && i < len(s.Fences) {
		return s.Fences[i]
	}
	return 0
}

// Lost returns a channel closed when the lock is lost while held.
func (s *State) Lost() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostLocked()
}

func (s *State) lostLocked() chan struct{} {
	if s.lost == nil {
		s.lost = make(chan struct{})
	}
	return s.lost
}

// Err returns nil while the lock is held, an error wrapping
// distlock.ErrLost once it was lost (even after Release), and
// distlock.ErrNotHeld once it was released.
func (s *State) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Lose declares the lock lost with cause, which must wrap
// distlock.ErrLost, unless it was lost or released already. It reports
// whether it did.
func (s *State) Lose(cause error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false
	}
	s.err = cause
	close(s.lostLocked())
	return true
}

// MarkReleased marks the lock released, so that it is lost no more, with
// notHeld (distlock.ErrNotHeld) as Err unless it was lost before, and
// returns the loss, if any. first is false if it was released before: the
// backend's Release then returns ErrNotHeld. notHeld is an argument
// because the Redis backend lives in package distlock itself, which this
// package cannot import.
func (s *State) MarkReleased(notHeld error) (lost error, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.released {
		return nil, false
	}
	s.released = true
	lost = s.err
	if s.err == nil {
		s.err = notHeld
	}
	return lost, true
}

// Released reports whether MarkReleased was called.
func (s *State) Released() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.released
}

// OwnerToken returns 128 random bits in hex. It tells the holder of a key
// apart from everybody else, so that release and refresh only ever touch
// the caller's own keys.
func OwnerToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}

// Backoff returns how long a waiter sleeps before its next attempt:
// jittered exponential between minimum and maximum, so that rivals spread
// out rather than collide again in lockstep; but, when pttl is not
// negative (what is left of the holder's lease), no longer than pttl, so
// an expiry is noticed promptly.
func Backoff(attempt int, minimum, maximum, pttl time.Duration) time.Duration {
	d := maximum
	if attempt < 63 && minimum <= maximum>>attempt { // minimum<<attempt neither overflows nor exceeds maximum
		d = minimum << attempt
	}
	d = d/2 + mathrand.N(d/2+1) // between d/2 and d
	if pttl >= 0 && pttl < d {
		d = pttl + time.Millisecond
	}
	return d
}

// Sleep waits for d, or returns ctx's error once ctx ends: a waiter's
// backoff.
func Sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lease is how a holder counts a lease of TTL that the server keeps for
// it: the holder stops counting on it before the server could end it, by
// Drift, for clocks that run at different rates, and by StopMargin, the
// time the holder needs to stop what it does under the lock once it is
// told of the loss. Without StopMargin the holder is told at about the
// moment the server may hand the keys on, and whatever it was doing runs
// on beside the next holder until it stops.
type Lease struct {
	TTL, Drift, StopMargin time.Duration
}

// End returns until when a lease set by a request sent at sent is surely
// still valid on the server, less the stop margin: the server started it
// after the request left, so sent+TTL is early enough while both clocks
// run at the same rate.
func (l Lease) End(sent time.Time) time.Time {
	return sent.Add(l.TTL - l.Drift - l.StopMargin)
}

// Check returns an error unless the holder keeps most of the lease:
// StopMargin not negative, Drift and StopMargin together below half the
// TTL, and renewEvery, when positive, below what is left of the TTL after
// them (a renewal due after End would come too late).
func (l Lease) Check(renewEvery time.Duration) error {
	held := l.TTL - l.Drift - l.StopMargin
	switch {
	case l.StopMargin < 0:
		return fmt.Errorf("StopMargin %v is negative", l.StopMargin)
	case held <= l.TTL/2:
		return fmt.Errorf("StopMargin %v and the drift allowance %v leave the holder %v of the TTL %v; they must leave more than half of it",
			l.StopMargin, l.Drift, held, l.TTL)
	case renewEvery >= held:
		return fmt.Errorf("RenewEvery %v must be below the %v of the TTL %v that the holder counts on (TTL minus drift allowance and StopMargin)",
			renewEvery, held, l.TTL)
	}
	return nil
}

// Expired returns the cause of the loss of a lock on keys whose lease ran
// out before a renewal succeeded, wrapping lost (distlock.ErrLost) and
// last, the last failed renewal's error, if any: what a watchdog's Expire
// declares.
func Expired(lost error, keys []string, last error) error {
	if last != nil {
		return fmt.Errorf("%w: the lease of %q ran out; last renewal: %w", lost, keys, last)
	}
	return fmt.Errorf("%w: the lease of %q ran out without a renewal", lost, keys)
}
