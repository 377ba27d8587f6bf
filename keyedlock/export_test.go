package keyedlock

// Waiting returns how many goroutines wait for key. Tests use it to know
// that a goroutine has queued before they act, instead of sleeping.
func (m *Mutex) Waiting(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for w := m.keys[key].head; w != nil; w = w.next {
		n++
	}
	return n
}
