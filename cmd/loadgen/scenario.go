package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
)

// The largest screening the API accepts: rows A-Z, seats 1-100.
const (
	maxRows              = 26
	maxSeatsPerRow       = 100
	maxSeatsPerScreening = maxRows * maxSeatsPerRow
)

// seatID names the seat at index i (0-based, row by row) of a screening
// with perRow seats per row: 0 is "A1", perRow is "B1".
func seatID(i, perRow int) string {
	return string(rune('A'+i/perRow)) + strconv.Itoa(i%perRow+1)
}

// target is where one booking request goes: which screening, which seats.
type target struct {
	screening *screening
	seats     []string
}

// picker chooses the seats of request number i. rng belongs to the calling
// client alone (a *rand.Rand is not safe for concurrent use), so a picker
// itself must be safe for concurrent use.
type picker interface {
	pick(ctx context.Context, i int, rng *rand.Rand) (target, error)
}

// newPicker builds the picker of a scenario. seed fixes the random seat
// popularity of mixed, so that two runs with one seed are comparable.
func newPicker(scenario string, pool *screeningPool, hotSeats, targets int, seed uint64) (picker, error) {
	first := pool.first()
	switch scenario {
	case scenarioHot:
		if hotSeats > first.capacity() {
			return nil, usagef("-seats %d: screening %s has only %d seats", hotSeats, first.ID, first.capacity())
		}
		return hotPicker{s: first, seats: hotSeats, targets: targets}, nil
	case scenarioSpread:
		return spreadPicker{pool: pool}, nil
	case scenarioMixed:
		return newMixedPicker(first, seed), nil
	case scenarioMulti:
		return multiPicker{s: first}, nil
	}
	return nil, usagef("unknown scenario %q", scenario)
}

// hotPicker sends every client after the same few hot seats, the worst
// case for a lock. Request i goes to target i mod targets (the driver's
// round robin), so consecutive requests ask for the same seat: each hot
// seat is raced on every instance. (Seat i mod seats would send a seat
// only ever to one instance whenever the number of seats is a multiple of
// the number of targets, and a per-process lock would look like a
// distributed one.)
type hotPicker struct {
	s       *screening
	seats   int
	targets int
}

func (p hotPicker) pick(_ context.Context, i int, _ *rand.Rand) (target, error) {
	return target{p.s, []string{seatID(i/max(p.targets, 1)%p.seats, p.s.SeatsPerRow)}}, nil
}

// spreadPicker gives request i seat i, and moves on to fresh screenings when
// one is full: no two requests ever want the same seat, so a correct keyed
// lock lets them all run in parallel.
type spreadPicker struct{ pool *screeningPool }

func (p spreadPicker) pick(ctx context.Context, i int, _ *rand.Rand) (target, error) {
	s, seat, err := p.pool.locate(ctx, i)
	if err != nil {
		return target{}, err
	}
	return target{s, []string{seatID(seat, s.SeatsPerRow)}}, nil
}

// zipfExponent shapes the popularity of mixed: with s = 1.1 over 2600 seats
// the most popular seat draws about 17% of the requests, the top 10 about
// 44% and the top 100 about 71%, while the tail still sees traffic.
const zipfExponent = 1.1

// mixedPicker draws seats with a Zipf-skewed popularity, like a real
// audience: a few seats (the middle of the room) are wanted by many, most by
// few. Which seat has which rank is a shuffle fixed by the seed.
type mixedPicker struct {
	s    *screening
	rank []int // rank[r] is the seat index of the r-th most popular seat

	// zipfs holds one *rand.Zipf per caller's rng: a Zipf keeps its own
	// reference to the rng it draws from, and is not safe for concurrent
	// use. The mutex protects the map only; each Zipf is then used by the
	// one client that owns its rng.
	mu    sync.Mutex
	zipfs map[*rand.Rand]*rand.Zipf
}

func newMixedPicker(s *screening, seed uint64) *mixedPicker {
	rank := rand.New(rand.NewPCG(seed, 0x5ea710c)).Perm(s.capacity())
	return &mixedPicker{s: s, rank: rank, zipfs: map[*rand.Rand]*rand.Zipf{}}
}

func (p *mixedPicker) pick(_ context.Context, _ int, rng *rand.Rand) (target, error) {
	p.mu.Lock()
	z, ok := p.zipfs[rng]
	if !ok {
		z = rand.NewZipf(rng, zipfExponent, 1, uint64(len(p.rank)-1))
		p.zipfs[rng] = z
	}
	p.mu.Unlock()
	return target{p.s, []string{seatID(p.rank[z.Uint64()], p.s.SeatsPerRow)}}, nil
}

// multiPicker books groups of 2 to 4 adjacent seats in one row, like
// friends going together: all-or-nothing bookings whose groups overlap.
type multiPicker struct{ s *screening }

func (p multiPicker) pick(_ context.Context, _ int, rng *rand.Rand) (target, error) {
	return target{p.s, adjacentGroup(rng, p.s.Rows, p.s.SeatsPerRow)}, nil
}

// adjacentGroup draws a group of 2 to 4 adjacent seats in a random row
// (fewer when a row is shorter than that).
func adjacentGroup(rng *rand.Rand, rows, perRow int) []string {
	size := min(2+rng.IntN(3), perRow)
	row := rng.IntN(rows)
	start := rng.IntN(perRow - size + 1)
	seats := make([]string, size)
	for k := range seats {
		seats[k] = seatID(row*perRow+start+k, perRow)
	}
	return seats
}

// screeningPool holds the screenings of one run and creates more on demand
// when a scenario runs out of seats.
type screeningPool struct {
	// newScreening creates one more screening like the first.
	newScreening func(ctx context.Context) (*screening, error)

	// mu protects list. It is held while a screening is being created, so
	// that two clients that both run past the last seat create one new
	// screening, not two; the others wait, which happens once every few
	// thousand requests.
	mu   sync.Mutex
	list []*screening
}

// newScreeningPool starts a pool with its first screening.
func newScreeningPool(first *screening, create func(ctx context.Context) (*screening, error)) *screeningPool {
	return &screeningPool{newScreening: create, list: []*screening{first}}
}

func (p *screeningPool) first() *screening {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.list[0]
}

// all returns the screenings created so far.
func (p *screeningPool) all() []*screening {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*screening(nil), p.list...)
}

// locate maps seat number i of the whole run to a screening and a seat
// index in it, creating screenings until there are enough seats.
func (p *screeningPool) locate(ctx context.Context, i int) (*screening, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := 0; ; k++ {
		if k == len(p.list) {
			s, err := p.newScreening(ctx)
			if err != nil {
				return nil, 0, fmt.Errorf("creating screening %d: %w", k+1, err)
			}
			p.list = append(p.list, s)
		}
		if c := p.list[k].capacity(); i >= c {
			i -= c
			continue
		}
		return p.list[k], i, nil
	}
}
