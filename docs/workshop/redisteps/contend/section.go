package contend

import "sync"

// Section is a critical section that watches itself: it counts every
// entry while another client is inside, and every write accepted from a
// client that is no longer the latest to enter. A paused client is one
// the program made slow on purpose; overlaps it takes part in are
// counted apart, since a lease alone cannot prevent them.
type Section struct {
	mu       sync.Mutex // guards every field below
	inside   map[int]bool
	paused   map[int]bool
	latest   int
	overlaps int // two clients inside, neither of them paused
	pauses   int // two clients inside, one of them paused past its lease
	stale    int // writes accepted from a client that was not the latest in
}

// NewSection returns an empty section.
func NewSection() *Section {
	return &Section{inside: map[int]bool{}, paused: map[int]bool{}, latest: -1}
}

// Enter records that client is in; paused says it will stay past its lease.
func (s *Section) Enter(client int, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for other := range s.inside {
		if paused || s.paused[other] {
			s.pauses++
		} else {
			s.overlaps++
		}
	}
	s.inside[client], s.paused[client], s.latest = true, paused, client
}

// Wrote records that a write of client was accepted.
func (s *Section) Wrote(client int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest != client {
		s.stale++
	}
}

// Leave records that client is out.
func (s *Section) Leave(client int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inside, client)
	delete(s.paused, client)
}

// Counts returns the overlaps of unpaused clients, those with a paused
// client, and the stale writes accepted.
func (s *Section) Counts() (overlaps, pauses, stale int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlaps, s.pauses, s.stale
}
