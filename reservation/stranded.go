package reservation

// No stranded single seats. A free seat alone in its row, between taken
// or held seats or between one and the row's end, is one that a couple or
// a group can never have: it often stays empty. So best available never
// picks seats that leave one alone when a choice of the same count that
// leaves none exists (docs/api.md restates the rule and its order):
//
//   - adjacent: the best block in the usual order that strands no seat,
//     else the best block;
//   - not adjacent: seats taken one at a time in the usual order, each
//     the best one after which the seats chosen so far can still be
//     completed to a set that strands none; when no such set exists at
//     all, the count best seats as before.
//
// A seat another request is taking counts as taken: it will be, or its
// taker will fail and the next search sees it free.

// strandsNone reports whether taking the seats chosen (seat indexes) in
// addition to those in taken leaves no free seat alone next to one of
// them. A free seat alone elsewhere in the row was alone before: the
// choice did not strand it.
func strandsNone(taken []bool, perRow int, chosen []int) bool {
	in := func(i int) bool {
		for _, c := range chosen {
			if c == i {
				return true
			}
		}
		return taken[i]
	}
	// occupied says whether the seat at number n (0-based) of row's first
	// index is taken, the row's ends counting as taken.
	occupied := func(first, n int) bool { return n < 0 || n >= perRow || in(first+n) }
	for _, c := range chosen {
		first, n := c-c%perRow, c%perRow
		for _, nb := range [2]int{n - 1, n + 1} {
			if !occupied(first, nb) && occupied(first, nb-1) && occupied(first, nb+1) {
				return false
			}
		}
	}
	return true
}

// completable reports whether m more free seats can be added to the
// seats chosen so that the whole set strands none. Every free run of
// seats left in a row is looked at once: a run of one next to a chosen
// seat must be taken; from any other run of length L, j seats can be
// taken without stranding one exactly when L-j is not 1 (take them from
// one end). Whether the runs' allowed counts can add up to m is a small
// subset sum, m being at most MaxSeatsPerBooking.
func completable(taken []bool, perRow int, chosen []int, m int) bool {
	occ := make([]bool, len(taken))
	copy(occ, taken)
	for _, c := range chosen {
		occ[c] = true
	}
	sums := uint64(1) // bit k: k seats can be taken from the runs so far
	for start := 0; start < len(occ); {
		if occ[start] {
			start++
			continue
		}
		end := start // the run is start..end-1, within one row
		for end < len(occ) && !occ[end] && (end == start || end%perRow != 0) {
			end++
		}
		sums = addRun(sums, end-start, forcedRun(occ, perRow, chosen, start, end), m)
		start = end
	}
	return sums&(1<<m) != 0
}

// forcedRun reports whether the free run start..end-1 is a single seat
// that a chosen seat stranded: it must be taken too.
func forcedRun(occ []bool, perRow int, chosen []int, start, end int) bool {
	if end-start != 1 {
		return false
	}
	for _, c := range chosen {
		if c/perRow == start/perRow && (c == start-1 || c == start+1) {
			return true
		}
	}
	return false
}

// addRun adds to the reachable sums the counts that can be taken from a
// run of length n: exactly 1 when forced, else any j of 0..n but n-1.
// Sums above m are dropped.
func addRun(sums uint64, n int, forced bool, m int) uint64 {
	var out uint64
	for j := 0; j <= n && j <= m; j++ {
		switch {
		case forced && j != 1:
			continue
		case !forced && n-j == 1 && n > 1:
			continue
		}
		out |= sums << j
	}
	return out & (1<<(m+1) - 1)
}
