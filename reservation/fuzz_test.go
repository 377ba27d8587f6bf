package reservation_test

import (
	"regexp"
	"testing"

	"github.com/seatlock/seatlock/reservation"
)

// seatIDPattern is the contract's seat id, written independently of the
// parser: a row letter and a number from 1 to 999 without leading zeros.
// (No layout has more than 100 seats a row; the parser accepts up to three
// digits and leaves the layout check to Screening.HasSeat.)
var seatIDPattern = regexp.MustCompile(`^[A-Z][1-9][0-9]{0,2}$`)

// FuzzParseSeatID checks that ParseSeatID never panics, accepts exactly the
// ids of seatIDPattern, and that what it accepts round-trips through SeatID.
//
//	go test -run '^$' -fuzz '^FuzzParseSeatID$' -fuzztime 15s ./reservation
func FuzzParseSeatID(f *testing.F) {
	for _, seed := range []string{
		"A1", "C7", "Z100", "Z999", "A1000", "A0", "A01", "a1", "AA1", "1A",
		"", "A", "Z", "[1", "@1", "A-1", "A+1", "A 1", " A1", "A1 ", "A1\x00",
		"A١", "Ａ1", "A1\n", "\xffA1", "A1e2", "A0x1", "A99999999999999999999",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		row, number, err := reservation.ParseSeatID(id)
		want := seatIDPattern.MatchString(id)
		if (err == nil) != want {
			t.Fatalf("ParseSeatID(%q) error %v; the pattern says valid=%v", id, err, want)
		}
		if err != nil {
			if row != 0 || number != 0 {
				t.Errorf("ParseSeatID(%q) failed but returned %q %d", id, row, number)
			}
			return
		}
		if row < 'A' || row > 'Z' || number < 1 || number > 999 {
			t.Fatalf("ParseSeatID(%q) = %q %d, out of range", id, row, number)
		}
		if back := reservation.SeatID(int(row-'A'), number); back != id {
			t.Errorf("SeatID(ParseSeatID(%q)) = %q", id, back)
		}
	})
}

// FuzzSeatIDRoundTrip checks the other direction: every seat of every
// possible layout has an id that parses back to it, and a screening has
// exactly the seats of its layout.
//
//	go test -run '^$' -fuzz '^FuzzSeatIDRoundTrip$' -fuzztime 10s ./reservation
func FuzzSeatIDRoundTrip(f *testing.F) {
	f.Add(uint8(0), uint16(1))
	f.Add(uint8(25), uint16(100))
	f.Add(uint8(25), uint16(999))
	f.Add(uint8(2), uint16(7))
	f.Fuzz(func(t *testing.T, r uint8, n uint16) {
		row, number := int(r%26), int(n%999)+1
		id := reservation.SeatID(row, number)
		gotRow, gotNumber, err := reservation.ParseSeatID(id)
		if err != nil || int(gotRow-'A') != row || gotNumber != number {
			t.Fatalf("ParseSeatID(SeatID(%d, %d) = %q) = %q %d %v", row, number, id, gotRow, gotNumber, err)
		}
		sc := reservation.Screening{Rows: reservation.MaxRows, SeatsPerRow: reservation.MaxSeatsPerRow}
		if in := sc.HasSeat(id); in != (number <= reservation.MaxSeatsPerRow) {
			t.Errorf("HasSeat(%q) = %v in a %dx%d layout", id, in, sc.Rows, sc.SeatsPerRow)
		}
		small := reservation.Screening{Rows: row + 1, SeatsPerRow: number}
		if !small.HasSeat(id) {
			t.Errorf("HasSeat(%q) = false in a %dx%d layout", id, small.Rows, small.SeatsPerRow)
		}
		if row > 0 && (reservation.Screening{Rows: row, SeatsPerRow: 999}).HasSeat(id) {
			t.Errorf("HasSeat(%q) = true with only %d rows", id, row)
		}
	})
}
