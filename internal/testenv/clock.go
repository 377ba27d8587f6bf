package testenv

import (
	"sync"
	"time"
)

// Clock is a clock that a test moves by hand, for code that takes its time
// from a Now function: it stands still until Advance.
type Clock struct {
	mu  sync.Mutex // protects now: the code under test reads it from its own goroutines
	now time.Time
}

// NewClock returns a Clock that reads now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
