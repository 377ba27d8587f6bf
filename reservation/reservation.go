package reservation

import (
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Strategy names what protects the seats of a screening while a booking
// checks and writes them.
type Strategy string

// The lock strategies. Which of them a running service offers is decided by
// the lockers it is given (see Options.Lockers).
const (
	// LockNone protects nothing: check, pay, write. It shows the race.
	LockNone Strategy = "none"
	// LockGlobal is one mutex for the whole process: correct on one
	// instance, but every seat waits for every other.
	LockGlobal Strategy = "global"
	// LockKeyed is one in-process mutex per seat: parallel, but broken
	// across instances.
	LockKeyed Strategy = "keyed"
	// LockRedis is a distributed Redis lock per seat.
	LockRedis Strategy = "redis"
	// LockKeyedRedis puts the keyed mutex in front of the Redis lock so that
	// only one goroutine per process and seat talks to Redis.
	LockKeyedRedis Strategy = "keyed+redis"
	// LockPostgres is a Postgres advisory lock per seat, held by a session.
	LockPostgres Strategy = "postgres"
	// LockPostgresXact is a Postgres advisory lock per seat taken inside
	// the transaction that writes the booking: the whole critical section
	// runs in that one transaction, so lock and write commit or roll back
	// together and no lease can run out in between. The strongest
	// strategy; its locker is made by a store that can lock in a
	// transaction (see Tx).
	LockPostgresXact Strategy = "postgres-xact"
	// LockRedlock is the Redlock algorithm over several independent Redis
	// servers: a majority of them must grant each seat.
	LockRedlock Strategy = "redlock"
	// LockFile is a file lock (flock) per seat: several processes, one host.
	LockFile Strategy = "file"
	// LockZooKeeper is ZooKeeper's fair lock recipe per seat: waiters are
	// served in arrival order.
	LockZooKeeper Strategy = "zookeeper"
)

// SeatKey returns the lock key of a seat, "{screening}:seat". Every
// per-seat strategy locks this key, and the two Postgres strategies rely
// on it being the same so that they exclude each other on a seat. The
// braces keep all seats of a screening in one Redis Cluster hash slot.
func SeatKey(screeningID, seat string) string {
	return "{" + screeningID + "}:" + seat
}

// Guard names how the final write of a booking is made.
type Guard string

// The write guards.
const (
	// GuardFence writes only if every seat is still free and the lock's
	// fencing token is newer than the seat's last one.
	GuardFence Guard = "fence"
	// GuardOff writes blindly: the last writer wins.
	GuardOff Guard = "off"
)

// Limits of the contract.
const (
	MaxRows            = 26
	MaxSeatsPerRow     = 100
	MaxSeatsPerBooking = 10
	MaxCustomerLen     = 64
	MaxMovieLen        = 200
	MaxIDLen           = 64
	MaxPaymentDelay    = time.Minute
)

// Screening is one showing of a movie, with its seat layout and the lock
// strategy and write guard that protect its seats.
type Screening struct {
	ID           string
	Movie        string
	StartsAt     time.Time
	Rows         int
	SeatsPerRow  int
	Lock         Strategy
	Guard        Guard
	PaymentDelay time.Duration
	// HoldTTL is how long a hold on its seats lasts (see Hold).
	HoldTTL time.Duration
	// Queue is its waiting room; the zero value is none (see queue.go).
	Queue QueueConfig
}

// SeatStatus says whether a seat is free, held or booked.
type SeatStatus string

// Seat statuses.
const (
	SeatFree   SeatStatus = "free"
	SeatBooked SeatStatus = "booked"
	// SeatHeld is a seat held by a live hold (see Hold).
	SeatHeld SeatStatus = "held"
)

// Seat is one seat of a screening's seat map.
type Seat struct {
	ID        string // "C7"
	Row       string // "C"
	Number    int    // 7
	Status    SeatStatus
	BookingID string // set when booked
	// Bookings lists every confirmed booking that claims the seat, oldest
	// first, when there is more than one: a double booking, which only a
	// blind write (GuardOff) can make. BookingID is the one that holds the
	// seat now.
	Bookings []string
	// HoldExpiresAt is when the live hold on a held seat ends.
	HoldExpiresAt time.Time
}

// BookingStatus says whether a booking holds its seats.
type BookingStatus string

// Booking statuses.
const (
	BookingConfirmed BookingStatus = "confirmed"
	BookingCancelled BookingStatus = "cancelled"
)

// Booking is a customer's hold on one or more seats of a screening.
type Booking struct {
	ID          string
	ScreeningID string
	Seats       []string
	Customer    string
	Status      BookingStatus
	CreatedAt   time.Time
}

// ParseSeatID splits a seat id such as "C7" into its row letter and number.
// It accepts exactly the ids of a layout: one upper-case letter A-Z followed
// by a number from 1 without leading zeros. It does not check a screening's
// size; see Screening.HasSeat.
func ParseSeatID(id string) (row byte, number int, err error) {
	if len(id) < 2 || len(id) > 4 {
		return 0, 0, fmt.Errorf("seat id %q: want a row letter A-Z and a seat number, like C7", clip(id))
	}
	row = id[0]
	if row < 'A' || row > 'Z' {
		return 0, 0, fmt.Errorf("seat id %q: row must be a letter A-Z", clip(id))
	}
	digits := id[1:]
	if digits[0] == '0' {
		return 0, 0, fmt.Errorf("seat id %q: seat numbers start at 1, without leading zeros", clip(id))
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, 0, fmt.Errorf("seat id %q: want a row letter A-Z and a seat number, like C7", clip(id))
		}
	}
	number, _ = strconv.Atoi(digits)
	return row, number, nil
}

// SeatID returns the id of the seat in row (0 for A) and number (from 1).
func SeatID(row, number int) string {
	return string(rune('A'+row)) + strconv.Itoa(number)
}

// HasSeat reports whether id names a seat of the screening's layout.
func (s Screening) HasSeat(id string) bool {
	row, number, err := ParseSeatID(id)
	return err == nil && int(row-'A') < s.Rows && number <= s.SeatsPerRow
}

// Capacity returns the number of seats of the screening.
func (s Screening) Capacity() int { return s.Rows * s.SeatsPerRow }

// validText checks that s has between 1 and max characters, all printable,
// and not only spaces.
func validText(s string, max int) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8")
	}
	n := utf8.RuneCountInString(s)
	if n == 0 {
		return fmt.Errorf("is empty")
	}
	if n > max {
		return fmt.Errorf("is longer than %d characters", max)
	}
	blank := true
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("contains a control or non-printable character")
		}
		if !unicode.IsSpace(r) {
			blank = false
		}
	}
	if blank {
		return fmt.Errorf("is blank")
	}
	return nil
}

// validID checks a client-chosen screening id: 1 to 64 letters, digits,
// '-' and '_'.
func validID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("must have 1 to %d characters", MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("may contain only letters, digits, '-' and '_'")
		}
	}
	return nil
}

// clip shortens s for an error message, so that a huge input is not echoed
// back whole.
func clip(s string) string {
	const max = 16
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
