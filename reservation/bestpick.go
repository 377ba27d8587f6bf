// Which seats best available tries first, and the picker that walks them.

package reservation

import (
	"cmp"

	"slices"

	"sync"
)

// seatIndex numbers the seats of a layout row by row from 0: A1 is 0, B1
// is perRow. The search works on these numbers; seat ids are made only for
// the seats it tries.
func seatIndex(id string, perRow int) (int, bool) {
	row, n, err := ParseSeatID(id)
	if err != nil || n > perRow {
		return 0, false
	}
	return int(row-'A')*perRow + n - 1, true
}

// rowOrder returns the row indexes (0 for A), middle first, a tie to the
// row further back.
func rowOrder(rows int) []int {
	order := make([]int, rows)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		// Distances are doubled so that a half-way middle stays whole.
		return cmp.Or(cmp.Compare(abs(2*a-(rows-1)), abs(2*b-(rows-1))), cmp.Compare(b, a))
	})
	return order
}

// numberOrder returns the first numbers of the blocks of width seats in a
// row of perRow seats, the block nearest the middle first, a tie to the
// lower number. Width 1 orders single seats.
func numberOrder(perRow, width int) []int {
	starts := make([]int, 0, max(perRow-width+1, 0))
	for s := 1; s+width-1 <= perRow; s++ {
		starts = append(starts, s)
	}
	// A block's centre is s + (width-1)/2, the row's (perRow+1)/2; doubled.
	dist := func(s int) int { return abs(2*s + width - 1 - (perRow + 1)) }
	slices.SortFunc(starts, func(a, b int) int { return cmp.Or(cmp.Compare(dist(a), dist(b)), cmp.Compare(a, b)) })
	return starts
}

func abs(x int) int { return max(x, -x) }

// blockOrder returns the seat index of the first seat of every block of
// width seats side by side in a layout, best block first (width 1: every
// seat, best first).
func blockOrder(rows, perRow, width int) []int {
	var out []int
	for _, r := range rowOrder(rows) {
		for _, n := range numberOrder(perRow, width) {
			out = append(out, r*perRow+n-1)
		}
	}
	return out
}

// orderKey names one order of blockOrder.
type orderKey struct{ rows, perRow, width int }

// orders caches blockOrder: a layout's order never changes, and computing
// it for every request of a busy screening would cost more than the rest
// of the search.
type orders struct {
	// mu protects m, which only grows: at most MaxRows * MaxSeatsPerRow *
	// MaxSeatsPerBooking small entries, fewer in practice (few layouts).
	mu sync.Mutex
	m  map[orderKey][]int
}

func (o *orders) get(rows, perRow, width int) []int {
	k := orderKey{rows, perRow, width}
	o.mu.Lock()
	defer o.mu.Unlock()
	if order, ok := o.m[k]; ok {
		return order
	}
	if o.m == nil {
		o.m = make(map[orderKey][]int)
	}
	order := blockOrder(rows, perRow, width)
	o.m[k] = order
	return order
}

// picker hands out the candidate seat sets of one best-available request,
// best first, leaving out every set with a seat in skip.
//
// Its cursor only moves forward. That is correct because skip only grows:
// a set the cursor has passed had a seat in skip, or was tried and
// failed, which put a seat of it into skip (see search), so it can never
// come back. Without the cursor, every one of the many requests that race
// for the same best seats would rescan the layout from its best seat after
// each try it loses.
type picker struct {
	sc       Screening
	count    int
	adjacent bool
	order    []int  // blockOrder of the layout for count (adjacent) or 1
	skip     []bool // by seat index: booked, held, or being taken
	next     int    // position in order of the first set not yet passed
}

// candidate returns the best set left, as sorted seat ids, or nil: the
// best that strands no single seat when one exists (see stranded.go).
func (p *picker) candidate() []string {
	if !p.adjacent {
		return p.singles()
	}
	fallback := -1
	for k := p.next; k < len(p.order); k++ {
		first := p.order[k]
		if p.blocked(first) {
			if fallback < 0 {
				p.next = k + 1 // before the first free block: passed for good
			}
			continue
		}
		if fallback < 0 {
			fallback = first
		}
		if block := p.block(first); strandsNone(p.skip, p.sc.SeatsPerRow, block) {
			return p.ids(block)
		}
	}
	if fallback < 0 {
		return nil
	}
	return p.ids(p.block(fallback))
}

// blocked reports whether the block of count seats from first has a seat
// in skip.
func (p *picker) blocked(first int) bool {
	for i := first; i < first+p.count; i++ {
		if p.skip[i] {
			return true
		}
	}
	return false
}

// block returns the seat indexes of the block of count seats from first.
func (p *picker) block(first int) []int {
	b := make([]int, p.count)
	for k := range b {
		b[k] = first + k
	}
	return b
}

// singles returns the best count seats that need not be adjacent: taken
// one at a time in the order, each the best after which the set can still
// be completed to one that strands none; else, when no such set exists,
// the count best.
func (p *picker) singles() []string {
	for p.next < len(p.order) && p.skip[p.order[p.next]] {
		p.next++ // a skipped seat before the first free one: passed for good
	}
	clean := completable(p.skip, p.sc.SeatsPerRow, nil, p.count)
	var chosen []int
	for k := p.next; k < len(p.order) && len(chosen) < p.count; k++ {
		i := p.order[k]
		if p.skip[i] {
			continue
		}
		if !clean || completable(p.skip, p.sc.SeatsPerRow, append(chosen, i), p.count-len(chosen)-1) {
			chosen = append(chosen, i)
		}
	}
	if len(chosen) < p.count {
		return nil
	}
	return p.ids(chosen)
}

// ids returns the sorted seat ids of seat indexes.
func (p *picker) ids(seats []int) []string {
	set := make([]string, len(seats))
	for k, i := range seats {
		set[k] = SeatID(i/p.sc.SeatsPerRow, i%p.sc.SeatsPerRow+1)
	}
	sortSeats(set)
	return set
}

// mark puts the seats into skip.
func (p *picker) mark(seats []string) {
	for _, id := range seats {
		if i, ok := seatIndex(id, p.sc.SeatsPerRow); ok && i < len(p.skip) {
			p.skip[i] = true
		}
	}
}
