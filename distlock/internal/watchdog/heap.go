package watchdog

import "time"

// setDue sets when the watchdog must next look at e: at its next renewal,
// or at its deadline when that comes first, when a renewal is in flight,
// or when there are no renewals.
func (e *Entry) setDue() {
	e.due = e.deadline
	if e.deadline.IsZero() {
		e.due = time.Now().Add(100 * 365 * 24 * time.Hour) // never expires
	}
	if e.renewing == nil && !e.renewAt.IsZero() && e.renewAt.Before(e.due) {
		e.due = e.renewAt
	}
}

// entryHeap orders entries by due time, for container/heap. Each entry
// keeps its position in index, so that Unwatch removes it in O(log n).
type entryHeap []*Entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *entryHeap) Push(x any) {
	e := x.(*Entry)
	e.index, e.watched = len(*h), true
	*h = append(*h, e)
}

func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil // let the lock be collected
	e.watched = false
	*h = old[:len(old)-1]
	return e
}
