package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestSeatID(t *testing.T) {
	for i, want := range map[int]string{0: "A1", 6: "A7", 100: "B1", 2599: "Z100"} {
		if got := seatID(i, 100); got != want {
			t.Errorf("seatID(%d, 100) = %s, want %s", i, got, want)
		}
	}
}

func TestHotPickerCyclesThroughHotSeats(t *testing.T) {
	for _, tt := range []struct {
		seats, targets int
		want           string
	}{
		{3, 1, "[A1 A2 A3 A1 A2 A3 A1 A2]"},
		// Every seat goes to both targets (request i goes to target i
		// mod 2), even when the seats are a multiple of the targets.
		{4, 2, "[A1 A1 A2 A2 A3 A3 A4 A4]"},
		{2, 2, "[A1 A1 A2 A2 A1 A1 A2 A2]"},
	} {
		p := hotPicker{s: &screening{ID: "s", Rows: 26, SeatsPerRow: 100}, seats: tt.seats, targets: tt.targets}
		var got []string
		for i := range 8 {
			tg, _ := p.pick(context.Background(), i, nil)
			got = append(got, tg.seats...)
		}
		if fmt.Sprint(got) != tt.want {
			t.Errorf("%d seats on %d targets: hot seats = %v, want %s", tt.seats, tt.targets, got, tt.want)
		}
	}
}

func TestAdjacentGroup(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, layout := range []struct{ rows, perRow int }{{26, 100}, {3, 4}, {2, 3}, {1, 1}} {
		sizes := map[int]int{}
		for range 2000 {
			seats := adjacentGroup(rng, layout.rows, layout.perRow)
			sizes[len(seats)]++
			if len(seats) < min(2, layout.perRow) || len(seats) > 4 {
				t.Fatalf("%v: group of %d", layout, len(seats))
			}
			row, first := seats[0][:1], mustAtoi(t, seats[0][1:])
			if first < 1 || first+len(seats)-1 > layout.perRow || row[0] >= byte('A'+layout.rows) {
				t.Fatalf("%v: %v leaves the room", layout, seats)
			}
			for k, s := range seats {
				if s != row+strconv.Itoa(first+k) {
					t.Fatalf("%v: %v are not adjacent in one row", layout, seats)
				}
			}
		}
		if layout.perRow >= 4 && (sizes[2] == 0 || sizes[3] == 0 || sizes[4] == 0) {
			t.Errorf("%v: sizes %v, want 2, 3 and 4", layout, sizes)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMixedPickerIsSkewed(t *testing.T) {
	s := &screening{ID: "s", Rows: 26, SeatsPerRow: 100}
	p := newMixedPicker(s, 42)
	rng := rand.New(rand.NewPCG(7, 7))
	hits := map[string]int{}
	const draws = 20000
	for i := range draws {
		tg, _ := p.pick(context.Background(), i, rng)
		hits[tg.seats[0]]++
	}
	top := seatID(p.rank[0], s.SeatsPerRow)
	// Zipf(1.1) over 2600 seats gives the top seat about 17% of the
	// draws; uniform would give it 0.04%.
	if share := float64(hits[top]) / draws; share < 0.12 || share > 0.22 {
		t.Errorf("top seat %s drew %.1f%%, want about 17%%", top, 100*share)
	}
	if len(hits) < 300 {
		t.Errorf("only %d distinct seats drawn, want a long tail", len(hits))
	}
	// The same seed ranks the seats the same way.
	if q := newMixedPicker(s, 42); q.rank[0] != p.rank[0] || q.rank[99] != p.rank[99] {
		t.Error("same seed, different popularity")
	}
}

func TestSpreadPickerNeverRepeatsASeat(t *testing.T) {
	created := 0
	pool := newScreeningPool(&screening{ID: "s0", Rows: 1, SeatsPerRow: 5}, func(context.Context) (*screening, error) {
		created++
		return &screening{ID: "s" + strconv.Itoa(created), Rows: 2, SeatsPerRow: 3}, nil
	})
	p := spreadPicker{pool: pool}
	seen := map[string]bool{}
	for i := range 23 { // 5 + 3*6
		tg, err := p.pick(context.Background(), i, nil)
		if err != nil {
			t.Fatal(err)
		}
		key := seatKey(tg.screening.ID, tg.seats[0])
		if seen[key] {
			t.Fatalf("request %d got %s again", i, key)
		}
		seen[key] = true
	}
	if created != 3 {
		t.Errorf("created %d screenings, want 3", created)
	}
}
