package storetest

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/reservation"
)

// testHolds proves the HoldStore half of a store. Expiry is judged by the
// store's own clock: the tests that need an expired hold give it a short
// TTL and wait until the store itself reports it expired, so no sleep
// races the store.
func testHolds(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	testHoldKeeps(t, newStore)
	testHoldConfirmOnce(t, newStore)
	testHoldRelease(t, newStore)
	testHoldExpires(t, newStore)
	testHoldUnknown(t, newStore)
	testConfirmsRace(t, newStore)
	testConfirmRacesRelease(t, newStore)
	testConfirmRacesExpiry(t, newStore)
	testHoldsAndBookingsRace(t, newStore)
}

// testHoldKeeps checks that a hold keeps its seats from bookings and other holds,
// and a refused hold writes nothing.
func testHoldKeeps(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("hold keeps its seats from bookings and other holds", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		w := newHoldWrite(sc, time.Minute, "A1", "A2")
		before := time.Now()
		h := mustHold(t, store, w)
		if h.Status != reservation.HoldHeld || h.BookingID != "" || !slices.Equal(h.Seats, w.Hold.Seats) {
			t.Errorf("CreateHold = %+v, want held, seats %v, no booking", h, w.Hold.Seats)
		}
		if got := h.ExpiresAt.Sub(h.CreatedAt); got != time.Minute {
			t.Errorf("hold lasts %v (from %v to %v), want its TTL of 1m", got, h.CreatedAt, h.ExpiresAt)
		}
		// Loose: the store's clock is another process's, on this host.
		if d := h.CreatedAt.Sub(before); d < -5*time.Second || d > time.Minute {
			t.Errorf("hold created at %v, but the test asked at %v", h.CreatedAt, before)
		}
		got, tokenHash, err := store.Hold(ctx, h.ID)
		if err != nil {
			t.Fatalf("Hold: %v", err)
		}
		checkHold(t, got, h)
		if !slices.Equal(tokenHash, w.TokenHash) {
			t.Errorf("Hold returned token hash %x, want %x", tokenHash, w.TokenHash)
		}
		checkHeld(t, store, sc.ID, map[string]time.Time{"A1": h.ExpiresAt, "A2": h.ExpiresAt})

		checkHeldError(t, store.Book(ctx, newWrite(sc, "A2", "A3")), "A2")
		_, err = store.CreateHold(ctx, newHoldWrite(sc, time.Minute, "A1", "A3"))
		checkHeldError(t, err, "A1")
		checkBooked(t, store, sc.ID, map[string]string{})
		checkHeld(t, store, sc.ID, map[string]time.Time{"A1": h.ExpiresAt, "A2": h.ExpiresAt})
		mustBook(t, store, newWrite(sc, "A4"))
		if taken, held, err := store.SeatsInUse(ctx, sc.ID, []string{"A3", "A4", "A2", "A1"}); err != nil || !slices.Equal(taken, []string{"A4"}) || !slices.Equal(held, []string{"A2", "A1"}) {
			t.Errorf("SeatsInUse(A3, A4, A2, A1) = %v, %v, %v; want taken [A4], held [A2 A1]", taken, held, err)
		}
	})

	t.Run("hold over a booked seat is refused and writes nothing", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		mustBook(t, store, newWrite(sc, "B2"))
		mustHold(t, store, newHoldWrite(sc, time.Minute, "B4"))
		w := newHoldWrite(sc, time.Minute, "B1", "B2", "B3", "B4")
		_, err := store.CreateHold(ctx, w)
		checkTaken(t, err, "B2") // taken is reported before held
		if _, _, err := store.Hold(ctx, w.Hold.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("Hold(refused) = %v, want ErrNotFound", err)
		}
		mustHold(t, store, newHoldWrite(sc, time.Minute, "B1", "B3"))
	})
}

// testHoldConfirmOnce checks that a confirm books a hold's seats once,
// and only its seats.
func testHoldConfirmOnce(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("confirm books the held seats once", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, time.Minute, "C1", "C2"))
		w := newWrite(sc, "C1", "C2")
		if err := store.ConfirmHold(ctx, h.ID, w); err != nil {
			t.Fatalf("ConfirmHold: %v", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{"C1": w.Booking.ID, "C2": w.Booking.ID})
		checkHeld(t, store, sc.ID, map[string]time.Time{})
		got, _, err := store.Hold(ctx, h.ID)
		if err != nil || got.Status != reservation.HoldConfirmed || got.BookingID != w.Booking.ID {
			t.Errorf("Hold after confirm = %+v, %v; want confirmed with booking %s", got, err, w.Booking.ID)
		}
		b, _, err := store.Booking(ctx, w.Booking.ID)
		if err != nil {
			t.Fatalf("Booking: %v", err)
		}
		checkBooking(t, b, w.Booking)

		again := newWrite(sc, "C1", "C2")
		if err := store.ConfirmHold(ctx, h.ID, again); !errors.Is(err, reservation.ErrConflict) {
			t.Errorf("second ConfirmHold: %v, want ErrConflict", err)
		}
		if _, _, err := store.Booking(ctx, again.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("second confirm stored its booking (Booking: %v)", err)
		}
		if st, err := store.ReleaseHold(ctx, h.ID); !errors.Is(err, reservation.ErrConflict) || st != reservation.HoldConfirmed {
			t.Errorf("ReleaseHold(confirmed) = %q, %v; want confirmed, ErrConflict", st, err)
		}
		checkBooked(t, store, sc.ID, map[string]string{"C1": w.Booking.ID, "C2": w.Booking.ID})
	})

	t.Run("confirm with a booking for other seats is invalid", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, time.Minute, "C1", "C2"))
		if err := store.ConfirmHold(ctx, h.ID, newWrite(sc, "C1", "C3")); !errors.Is(err, reservation.ErrInvalid) {
			t.Errorf("ConfirmHold with other seats: %v, want ErrInvalid", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{})
	})
}

// testHoldRelease checks that a release frees the seats.
func testHoldRelease(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("release frees the seats", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, time.Minute, "D1", "D2"))
		if st, err := store.ReleaseHold(ctx, h.ID); err != nil || st != reservation.HoldHeld {
			t.Fatalf("ReleaseHold = %q, %v; want held (its status before), nil", st, err)
		}
		checkHeld(t, store, sc.ID, map[string]time.Time{})
		if got, _, err := store.Hold(ctx, h.ID); err != nil || got.Status != reservation.HoldReleased {
			t.Errorf("Hold after release = %+v, %v; want released", got, err)
		}
		if st, err := store.ReleaseHold(ctx, h.ID); err != nil || st != reservation.HoldReleased {
			t.Errorf("second ReleaseHold = %q, %v; want released, nil", st, err)
		}
		if err := store.ConfirmHold(ctx, h.ID, newWrite(sc, "D1", "D2")); !errors.Is(err, reservation.ErrConflict) {
			t.Errorf("ConfirmHold(released): %v, want ErrConflict", err)
		}
		mustBook(t, store, newWrite(sc, "D1"))
		mustHold(t, store, newHoldWrite(sc, time.Minute, "D2"))
	})
}

// testHoldExpires checks that a hold expires by the store's clock and
// fences like a booking.
func testHoldExpires(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("expired hold frees its seats and cannot be confirmed", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, 300*time.Millisecond, "E1", "E2"))
		waitExpired(t, store, h.ID)

		checkHeld(t, store, sc.ID, map[string]time.Time{})
		if taken, held, err := store.SeatsInUse(ctx, sc.ID, h.Seats); err != nil || len(taken)+len(held) != 0 {
			t.Errorf("SeatsInUse after expiry = %v, %v, %v; want none", taken, held, err)
		}
		// Nobody took the seats, and still the confirm is refused.
		w := newWrite(sc, "E1", "E2")
		if err := store.ConfirmHold(ctx, h.ID, w); !errors.Is(err, reservation.ErrHoldExpired) {
			t.Fatalf("ConfirmHold after expiry: %v, want ErrHoldExpired", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{})
		if _, _, err := store.Booking(ctx, w.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("refused confirm stored its booking (Booking: %v)", err)
		}
		if st, err := store.ReleaseHold(ctx, h.ID); err != nil || st != reservation.HoldExpired {
			t.Errorf("ReleaseHold(expired) = %q, %v; want expired, nil", st, err)
		}
		// The seats are free for everyone: a booking and a new hold.
		mustBook(t, store, newWrite(sc, "E1"))
		next := mustHold(t, store, newHoldWrite(sc, time.Minute, "E2"))
		checkHeld(t, store, sc.ID, map[string]time.Time{"E2": next.ExpiresAt})
		if err := store.ConfirmHold(ctx, h.ID, newWrite(sc, "E1", "E2")); !errors.Is(err, reservation.ErrHoldExpired) {
			t.Errorf("ConfirmHold of the expired hold after others took its seats: %v, want ErrHoldExpired", err)
		}
	})

	t.Run("hold fences like a booking", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := newHoldWrite(sc, time.Minute, "F1")
		first.Fences = map[string]int64{"F1": 5}
		h := mustHold(t, store, first)
		if _, err := store.ReleaseHold(ctx, h.ID); err != nil {
			t.Fatal(err)
		}
		stale := newHoldWrite(sc, time.Minute, "F1")
		stale.Fences = map[string]int64{"F1": 5}
		if _, err := store.CreateHold(ctx, stale); !errors.Is(err, reservation.ErrStaleToken) {
			t.Errorf("CreateHold with the seat's last fence: %v, want ErrStaleToken", err)
		}
		book := newWrite(sc, "F1")
		book.Fences = map[string]int64{"F1": 4}
		if err := store.Book(ctx, book); !errors.Is(err, reservation.ErrStaleToken) {
			t.Errorf("Book with a fence older than the hold's: %v, want ErrStaleToken", err)
		}
		newer := newHoldWrite(sc, time.Minute, "F1")
		newer.Fences = map[string]int64{"F1": 6}
		mustHold(t, store, newer)
	})
}

// testHoldUnknown checks that unknown and malformed ids are refused.
func testHoldUnknown(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("unknown and malformed", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		unknown := uuid.NewString()
		for _, id := range []string{unknown, "not-a-uuid"} {
			if _, _, err := store.Hold(ctx, id); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("Hold(%q): %v, want ErrNotFound", id, err)
			}
			if err := store.ConfirmHold(ctx, id, newWrite(sc, "A1")); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("ConfirmHold(%q): %v, want ErrNotFound", id, err)
			}
			if _, err := store.ReleaseHold(ctx, id); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("ReleaseHold(%q): %v, want ErrNotFound", id, err)
			}
		}
		if _, err := store.CreateHold(ctx, newHoldWrite(screeningValue(), time.Minute, "A1")); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("CreateHold on an unknown screening: %v, want ErrNotFound", err)
		}
		w := newHoldWrite(sc, time.Minute, "A1")
		mustHold(t, store, w)
		again := newHoldWrite(sc, time.Minute, "A2")
		again.Hold.ID = w.Hold.ID
		if _, err := store.CreateHold(ctx, again); !errors.Is(err, reservation.ErrConflict) {
			t.Errorf("CreateHold with a used id: %v, want ErrConflict", err)
		}
		for name, mutate := range map[string]func(*reservation.HoldWrite){
			"id not a uuid": func(w *reservation.HoldWrite) { w.Hold.ID = "x" },
			"no seats":      func(w *reservation.HoldWrite) { w.Hold.Seats = nil },
			"seat twice":    func(w *reservation.HoldWrite) { w.Hold.Seats = []string{"A5", "A5"} },
			"ttl zero":      func(w *reservation.HoldWrite) { w.TTL = 0 },
		} {
			w := newHoldWrite(sc, time.Minute, "A6")
			mutate(&w)
			if _, err := store.CreateHold(ctx, w); !errors.Is(err, reservation.ErrInvalid) {
				t.Errorf("CreateHold with %s: %v, want ErrInvalid", name, err)
			}
		}
		checkHeld(t, store, sc.ID, map[string]time.Time{"A1": mustRead(t, store, w.Hold.ID).ExpiresAt})
	})
}

// testConfirmsRace checks that concurrent confirms of one hold make one
// booking.
func testConfirmsRace(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("concurrent confirms of one hold make one booking", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, time.Minute, "G1", "G2"))
		const n = 20
		writes := make([]reservation.Write, n)
		for i := range writes {
			writes[i] = newWrite(sc, "G1", "G2")
		}
		errs := runAll(t, n, func(i int) error { return store.ConfirmHold(ctx, h.ID, writes[i]) })
		won := onlyWinner(t, "confirm", writes, errs, reservation.ErrConflict)
		checkBooked(t, store, sc.ID, map[string]string{"G1": won, "G2": won})
		if got := mustRead(t, store, h.ID); got.BookingID != won {
			t.Errorf("hold names booking %q, want the one confirmed, %s", got.BookingID, won)
		}
	})
}

// testConfirmRacesRelease checks that of a confirm and a release of one
// hold, exactly one wins.
func testConfirmRacesRelease(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("confirm racing release: exactly one wins", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		booked := map[string]string{}
		for i := range 10 {
			seat := reservation.SeatID(7, i+1)
			h := mustHold(t, store, newHoldWrite(sc, time.Minute, seat))
			w := newWrite(sc, seat)
			var released reservation.HoldStatus
			errs := runAll(t, 2, func(i int) error {
				if i == 0 {
					return store.ConfirmHold(ctx, h.ID, w)
				}
				var err error
				released, err = store.ReleaseHold(ctx, h.ID)
				return err
			})
			confirmed := errs[0] == nil
			switch {
			case confirmed && errors.Is(errs[1], reservation.ErrConflict):
				booked[seat] = w.Booking.ID
			case !confirmed && errors.Is(errs[0], reservation.ErrConflict) && errs[1] == nil && released == reservation.HoldHeld:
			default:
				t.Fatalf("confirm: %v; release: %q, %v; want exactly one to win", errs[0], released, errs[1])
			}
			checkBooked(t, store, sc.ID, booked)
			checkHeld(t, store, sc.ID, map[string]time.Time{})
		}
	})
}

// testConfirmRacesExpiry checks that a confirm racing its hold's expiry
// and a new hold never lets both win.
func testConfirmRacesExpiry(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("confirm racing the expiry and a new hold: never both", func(t *testing.T) {
		// Aimed at the moment of expiry: a confirm of the old hold, and
		// new holds of its seat tried until one is taken or the seat is
		// booked. Whoever wins, the other must lose: a booking from the
		// old hold and a new hold of its seat never both.
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		for i := range 8 {
			seat := reservation.SeatID(9, i+1)
			h := mustHold(t, store, newHoldWrite(sc, 200*time.Millisecond, seat))
			time.Sleep(time.Until(h.ExpiresAt) - 2*time.Millisecond)
			w := newWrite(sc, seat)
			var newHold error
			errs := runAll(t, 2, func(k int) error {
				if k == 0 {
					return store.ConfirmHold(ctx, h.ID, w)
				}
				for deadline := time.Now().Add(2 * time.Second); ; {
					_, newHold = store.CreateHold(ctx, newHoldWrite(sc, time.Minute, seat))
					if newHold == nil || errors.Is(newHold, reservation.ErrSeatTaken) || time.Now().After(deadline) {
						return newHold
					}
				}
			})
			confirmed := errs[0] == nil
			switch {
			case confirmed && errors.Is(newHold, reservation.ErrSeatTaken):
				checkBooked(t, store, sc.ID, map[string]string{seat: w.Booking.ID})
			case !confirmed && errors.Is(errs[0], reservation.ErrHoldExpired) && newHold == nil:
				if _, _, err := store.Booking(ctx, w.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
					t.Errorf("seat %s: the refused confirm stored its booking (Booking: %v)", seat, err)
				}
			default:
				t.Fatalf("seat %s: confirm %v, new hold %v: want exactly one of them", seat, errs[0], newHold)
			}
			// Free the seat for the next round's bookkeeping.
			if confirmed {
				mustCancel(t, store, w.Booking.ID)
			}
		}
	})
}

// testHoldsAndBookingsRace checks that of holds and bookings of one seat,
// exactly one wins.
func testHoldsAndBookingsRace(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("holds and bookings of one seat: exactly one wins", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		const n = 40
		holds := make([]reservation.HoldWrite, n)
		books := make([]reservation.Write, n)
		for i := range n {
			holds[i] = newHoldWrite(sc, time.Minute, "H1", "H2")
			books[i] = newWrite(sc, "H2", "H3")
		}
		errs := runAll(t, 2*n, func(i int) error {
			if i%2 == 0 {
				_, err := store.CreateHold(ctx, holds[i/2])
				return err
			}
			return store.Book(ctx, books[i/2])
		})
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, reservation.ErrSeatTaken) && !errors.Is(err, reservation.ErrSeatHeld):
				t.Errorf("write %d: %v, want success, ErrSeatTaken or ErrSeatHeld", i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d of %d writes that share seat H2 succeeded, want exactly 1", wins, 2*n)
		}
		booked, err := store.BookedSeats(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		held, err := store.SeatHolds(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(booked)+len(held) != 2 {
			t.Errorf("booked %v and held %v: want the two seats of the one winner", booked, held)
		}
	})
}

// runAll runs f(0) to f(n-1) each in a goroutine of its own, released
// together, and returns their errors; it fails t if they do not all return
// within a minute (a deadlock).
func runAll(t *testing.T, n int, f func(i int) error) []error {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = f(i)
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%d concurrent calls did not all return within a minute: deadlock?", n)
	}
	return errs
}

// newHoldWrite returns the write of a new hold of the seats for ttl.
func newHoldWrite(sc reservation.Screening, ttl time.Duration, seats ...string) reservation.HoldWrite {
	id := uuid.NewString()
	return reservation.HoldWrite{
		Hold:      reservation.Hold{ID: id, ScreeningID: sc.ID, Seats: seats, Customer: "bob"},
		TokenHash: hash("token of hold " + id),
		TTL:       ttl,
	}
}

func mustHold(t *testing.T, store reservation.Store, w reservation.HoldWrite) reservation.Hold {
	t.Helper()
	h, err := store.CreateHold(t.Context(), w)
	if err != nil {
		t.Fatalf("CreateHold(%v): %v", w.Hold.Seats, err)
	}
	if h.ID != w.Hold.ID || h.ScreeningID != w.Hold.ScreeningID || h.Customer != w.Hold.Customer {
		t.Fatalf("CreateHold = %+v, want the hold written, %+v", h, w.Hold)
	}
	return h
}

func mustRead(t *testing.T, store reservation.Store, id string) reservation.Hold {
	t.Helper()
	h, _, err := store.Hold(t.Context(), id)
	if err != nil {
		t.Fatalf("Hold(%s): %v", id, err)
	}
	return h
}

// waitExpired polls the store until it reports the hold expired, by its own
// clock, and fails t if that takes more than ten seconds.
func waitExpired(t *testing.T, store reservation.Store, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h := mustRead(t, store, id)
		if h.Status == reservation.HoldExpired {
			return
		}
		if h.Status != reservation.HoldHeld {
			t.Fatalf("hold %s is %s while waiting for it to expire", id, h.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("hold %s, expiring at %v, is still held after 10s", id, h.ExpiresAt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkHold(t *testing.T, got, want reservation.Hold) {
	t.Helper()
	if got.ID != want.ID || got.ScreeningID != want.ScreeningID || got.Customer != want.Customer ||
		got.Status != want.Status || !slices.Equal(got.Seats, want.Seats) || got.BookingID != want.BookingID ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("Hold = %+v, want %+v", got, want)
	}
}

// checkHeld fails t unless the live holds of the screening are exactly want.
func checkHeld(t *testing.T, store reservation.Store, screeningID string, want map[string]time.Time) {
	t.Helper()
	got, err := store.SeatHolds(t.Context(), screeningID)
	if err != nil {
		t.Fatalf("SeatHolds: %v", err)
	}
	if !maps.EqualFunc(got, want, time.Time.Equal) {
		t.Errorf("SeatHolds = %v, want %v", got, want)
	}
}

// checkHeldError checks that err is a *SeatsHeldError naming exactly seats.
func checkHeldError(t *testing.T, err error, seats ...string) {
	t.Helper()
	checkSeatsError(t, err, reservation.ErrSeatHeld, func(e *reservation.SeatsHeldError) []string { return e.Seats }, seats)
}
