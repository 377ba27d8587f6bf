package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/reservation"
)

// Run runs the suite against the stores that newStore returns. newStore is
// called once per subtest, with the subtest's t; it may return the same
// store every time.
func Run(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("screenings", func(t *testing.T) {
		testScreeningCreate(t, newStore)
		testScreeningList(t, newStore)
		testScreeningRefusals(t, newStore)
		testScreeningCount(t, newStore)
	})
	t.Run("book", func(t *testing.T) {
		testBookFree(t, newStore)
		testBookRefusals(t, newStore)
	})
	t.Run("fence", func(t *testing.T) {
		testFenceOrder(t, newStore)
		testFenceWhole(t, newStore)
	})
	t.Run("guard off", func(t *testing.T) { testGuardOff(t, newStore) })
	t.Run("seats in use", func(t *testing.T) { testSeatsInUse(t, newStore) })
	t.Run("cancel", func(t *testing.T) {
		testCancelFrees(t, newStore)
		testCancelAgain(t, newStore)
	})
	t.Run("idempotency", func(t *testing.T) { testIdempotency(t, newStore) })
	t.Run("copies", func(t *testing.T) { testCopies(t, newStore) })
	t.Run("concurrency", func(t *testing.T) { testConcurrency(t, newStore) })
	t.Run("holds", func(t *testing.T) { testHolds(t, newStore) })
	t.Run("payments", func(t *testing.T) { testPayments(t, newStore) })
	t.Run("ping", func(t *testing.T) {
		if err := newStore(t).Ping(t.Context()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
}

// testScreeningCreate checks that a created screening reads back as stored.
func testScreeningCreate(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("created screening is returned as stored", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		want := newScreening(t, store)
		got, err := store.Screening(ctx, want.ID)
		if err != nil {
			t.Fatalf("Screening: %v", err)
		}
		if utc(got) != utc(want) {
			t.Fatalf("Screening = %+v, want %+v", got, want)
		}
	})
}

// testScreeningList checks that the list pages oldest first.
func testScreeningList(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("list is oldest first", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		// Later screenings start earlier, so that creation order and
		// showtime order differ.
		var want []string
		for i := range 3 {
			sc := screeningValue()
			sc.StartsAt = sc.StartsAt.Add(-time.Duration(i) * time.Hour)
			if err := store.CreateScreening(ctx, sc); err != nil {
				t.Fatalf("CreateScreening: %v", err)
			}
			want = append(want, sc.ID)
		}
		// The store may hold other tests' screenings; keep ours, in the
		// order listed. Pages of one from the first of ours walk the rest.
		got := []string{want[0]}
		for after := want[0]; len(got) < len(want); {
			page, err := store.Screenings(ctx, after, 1)
			if err != nil {
				t.Fatalf("Screenings(after %s, 1): %v", after, err)
			}
			if len(page) != 1 {
				t.Fatalf("Screenings(after %s, 1) = %d screenings, want 1", after, len(page))
			}
			after = page[0].ID
			if slices.Contains(want, after) {
				got = append(got, after)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Screenings lists %v, want %v", got, want)
		}
		all, err := store.Screenings(ctx, "", 1_000_000)
		if err != nil {
			t.Fatalf("Screenings: %v", err)
		}
		var first []string
		for _, sc := range all {
			if slices.Contains(want, sc.ID) {
				first = append(first, sc.ID)
			}
		}
		if !slices.Equal(first, want) {
			t.Fatalf("Screenings from the start lists %v, want %v", first, want)
		}
		two, err := store.Screenings(ctx, "", 2)
		if err != nil || len(two) != 2 {
			t.Fatalf("Screenings(\"\", 2) = %d screenings, %v; want 2", len(two), err)
		}
		last, err := store.Screenings(ctx, all[len(all)-1].ID, 5)
		if err != nil || len(last) != 0 {
			t.Fatalf("Screenings after the newest = %d screenings, %v; want none", len(last), err)
		}
	})
}

// testScreeningRefusals checks that unknown cursors and ids, and duplicate ids,
// are refused.
func testScreeningRefusals(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("list after an unknown screening is invalid", func(t *testing.T) {
		store := newStore(t)
		if _, err := store.Screenings(t.Context(), "no-such-"+uuid.NewString(), 10); !errors.Is(err, reservation.ErrInvalid) {
			t.Fatalf("Screenings(after unknown): %v, want ErrInvalid", err)
		}
	})

	t.Run("duplicate id is a conflict", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		again := sc
		again.Movie = "Another"
		if err := store.CreateScreening(ctx, again); !errors.Is(err, reservation.ErrConflict) {
			t.Fatalf("CreateScreening with a taken id: %v, want ErrConflict", err)
		}
		got, err := store.Screening(ctx, sc.ID)
		if err != nil || got.Movie != sc.Movie {
			t.Fatalf("after the conflict, Screening = %+v, %v; want the first one", got, err)
		}
	})

	t.Run("unknown id is not found", func(t *testing.T) {
		store := newStore(t)
		if _, err := store.Screening(t.Context(), "no-such-"+uuid.NewString()); !errors.Is(err, reservation.ErrNotFound) {
			t.Fatalf("Screening(unknown): %v, want ErrNotFound", err)
		}
	})
}

// testScreeningCount checks what CountScreenings counts against the
// screening limit: creations, not refusals, and neither what was created
// before since nor what started before it.
func testScreeningCount(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("count follows creations, not refusals", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		count := func() int { return countScreenings(t, store, time.Now().Add(-time.Hour)) }
		before := count()
		sc := newScreening(t, store)
		newScreening(t, store)
		if err := store.CreateScreening(ctx, sc); !errors.Is(err, reservation.ErrConflict) {
			t.Fatalf("CreateScreening with a taken id: %v, want ErrConflict", err)
		}
		if got := count(); got != before+2 {
			t.Fatalf("CountScreenings = %d after two creations and a conflict, want %d", got, before+2)
		}
	})

	t.Run("count leaves out what started and was created before since", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		count := func(since time.Time) int { return countScreenings(t, store, since) }
		later := time.Now().Add(time.Hour) // after every creation here, before every upcoming start
		before := count(later)
		newScreening(t, store) // upcoming: it starts in 2030
		played := screeningValue()
		played.StartsAt = time.Date(2020, 5, 17, 20, 15, 0, 0, time.UTC)
		if err := store.CreateScreening(ctx, played); err != nil {
			t.Fatal(err)
		}
		if got := count(later); got != before+1 {
			t.Errorf("CountScreenings(an hour ahead) = %d, want %d: the upcoming screening alone", got, before+1)
		}
		if got, want := count(time.Now().Add(-time.Hour)), before+2; got < want {
			t.Errorf("CountScreenings(an hour ago) = %d, want at least %d: a screening created since counts, whenever it starts", got, want)
		}
	})

}

// countScreenings is store.CountScreenings(since), failing the test on an error.
func countScreenings(t *testing.T, store reservation.Store, since time.Time) int {
	t.Helper()
	n, err := store.CountScreenings(t.Context(), since)
	if err != nil {
		t.Fatalf("CountScreenings: %v", err)
	}
	return n
}

// testBookFree checks that free seats are booked; taken ones are refused, listed,
// and the refused booking writes nothing.
func testBookFree(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("free seats are booked", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		w := newWrite(sc, "A1", "A2")
		mustBook(t, store, w)
		got, hash, err := store.Booking(ctx, w.Booking.ID)
		if err != nil {
			t.Fatalf("Booking: %v", err)
		}
		checkBooking(t, got, w.Booking)
		if !bytes.Equal(hash, w.TokenHash) {
			t.Errorf("Booking returned token hash %x, want %x", hash, w.TokenHash)
		}
		checkBooked(t, store, sc.ID, map[string]string{"A1": w.Booking.ID, "A2": w.Booking.ID})
	})

	t.Run("taken seats are refused and listed", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := newWrite(sc, "A2", "A4")
		mustBook(t, store, first)
		err := store.Book(ctx, newWrite(sc, "A1", "A2", "A3", "A4"))
		checkTaken(t, err, "A2", "A4")
	})

	t.Run("refused booking writes nothing", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := newWrite(sc, "B2")
		mustBook(t, store, first)
		refused := newWrite(sc, "B1", "B2", "B3")
		checkTaken(t, store.Book(ctx, refused), "B2")
		checkBooked(t, store, sc.ID, map[string]string{"B2": first.Booking.ID})
		if _, _, err := store.Booking(ctx, refused.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("Booking(refused) = %v, want ErrNotFound", err)
		}
		// The two free seats of the refused booking can be booked.
		mustBook(t, store, newWrite(sc, "B1", "B3"))
	})
}

// testBookRefusals checks that an unknown screening, a booking id used twice and a
// malformed write are refused.
func testBookRefusals(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("unknown screening is not found", func(t *testing.T) {
		store := newStore(t)
		sc := screeningValue() // never created
		if err := store.Book(t.Context(), newWrite(sc, "A1")); !errors.Is(err, reservation.ErrNotFound) {
			t.Fatalf("Book on an unknown screening: %v, want ErrNotFound", err)
		}
	})

	t.Run("booking id used twice is a conflict", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		w := newWrite(sc, "A1")
		mustBook(t, store, w)
		again := newWrite(sc, "A2")
		again.Booking.ID = w.Booking.ID
		if err := store.Book(ctx, again); !errors.Is(err, reservation.ErrConflict) {
			t.Fatalf("Book with a used booking id: %v, want ErrConflict", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{"A1": w.Booking.ID})
	})

	t.Run("malformed write is invalid", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		tests := []struct {
			name   string
			change func(w *reservation.Write)
		}{
			{"booking id not a uuid", func(w *reservation.Write) { w.Booking.ID = "b-1" }},
			{"no seats", func(w *reservation.Write) { w.Booking.Seats = nil }},
			{"seat listed twice", func(w *reservation.Write) { w.Booking.Seats = []string{"A1", "A1"} }},
			{"unknown guard", func(w *reservation.Write) { w.Guard = "maybe" }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				w := newWrite(sc, "A1")
				tt.change(&w)
				if err := store.Book(t.Context(), w); !errors.Is(err, reservation.ErrInvalid) {
					t.Fatalf("Book: %v, want ErrInvalid", err)
				}
			})
		}
		checkBooked(t, store, sc.ID, map[string]string{})
	})
}

// cancelledAt5 returns a screening whose seat A1 is free again after a
// booking wrote it with fence 5.
func cancelledAt5(t *testing.T, store reservation.Store) reservation.Screening {
	t.Helper()
	sc := newScreening(t, store)
	w := newWrite(sc, "A1")
	w.Fences = map[string]int64{"A1": 5}
	mustBook(t, store, w)
	mustCancel(t, store, w.Booking.ID)
	return sc
}

// testFenceOrder checks that a write whose fence is not newer than the
// seat's last is stale, on a free seat, and that fence 0 skips the check.
func testFenceOrder(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	tests := []struct {
		name  string
		fence int64
		stale bool
	}{
		{"same fence as the seat's last is stale", 5, true},
		{"older fence is stale", 3, true},
		{"newer fence writes", 6, false},
		{"fence 0 skips the check", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newStore(t)
			sc := cancelledAt5(t, store)
			w := newWrite(sc, "A1")
			w.Fences = map[string]int64{"A1": tt.fence}
			err := store.Book(t.Context(), w)
			if tt.stale {
				if !errors.Is(err, reservation.ErrStaleToken) {
					t.Fatalf("Book with fence %d: %v, want ErrStaleToken", tt.fence, err)
				}
				// The refusal says what the seat has seen, so that the
				// lock service can issue newer tokens (RaiseFences).
				var stale *reservation.StaleTokenError
				if !errors.As(err, &stale) || !maps.Equal(stale.Seen, map[string]int64{"A1": 5}) {
					t.Errorf("Book with fence %d: %#v, want a StaleTokenError saying A1 has seen fence 5", tt.fence, err)
				}
				checkBooked(t, store, sc.ID, map[string]string{})
				return
			}
			if err != nil {
				t.Fatalf("Book with fence %d: %v", tt.fence, err)
			}
			checkBooked(t, store, sc.ID, map[string]string{"A1": w.Booking.ID})
		})
	}
}

// testFenceWhole checks that fence 0 leaves the seat's fence as it was,
// that one stale seat refuses a whole booking, and that taken seats are
// reported before stale ones.
func testFenceWhole(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("fence 0 does not lower the seat's fence", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := cancelledAt5(t, store)
		w := newWrite(sc, "A1") // no fence
		mustBook(t, store, w)
		mustCancel(t, store, w.Booking.ID)
		old := newWrite(sc, "A1")
		old.Fences = map[string]int64{"A1": 4}
		if err := store.Book(ctx, old); !errors.Is(err, reservation.ErrStaleToken) {
			t.Fatalf("Book with fence 4 after fence 5: %v, want ErrStaleToken", err)
		}
	})

	t.Run("one stale seat refuses the whole booking", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := cancelledAt5(t, store)
		w := newWrite(sc, "A1", "A2")
		w.Fences = map[string]int64{"A1": 4, "A2": 9}
		if err := store.Book(ctx, w); !errors.Is(err, reservation.ErrStaleToken) {
			t.Fatalf("Book: %v, want ErrStaleToken", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{})
	})

	t.Run("taken seats are reported before stale ones", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := cancelledAt5(t, store)
		holder := newWrite(sc, "A2")
		mustBook(t, store, holder)
		w := newWrite(sc, "A1", "A2")
		w.Fences = map[string]int64{"A1": 4, "A2": 100}
		checkTaken(t, store.Book(ctx, w), "A2")
	})
}

func testGuardOff(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("last writer wins", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := newWrite(sc, "A1", "A2")
		mustBook(t, store, first)
		second := newWrite(sc, "A2", "A3")
		second.Guard = reservation.GuardOff
		mustBook(t, store, second)
		checkBooked(t, store, sc.ID, map[string]string{
			"A1": first.Booking.ID, "A2": second.Booking.ID, "A3": second.Booking.ID,
		})
		// Nobody told the first booking: it still says it is confirmed
		// for a seat it lost. This is the double booking.
		got, _, err := store.Booking(ctx, first.Booking.ID)
		if err != nil {
			t.Fatalf("Booking(first): %v", err)
		}
		checkBooking(t, got, first.Booking)
		checkDoubleBooked(t, store, sc.ID, map[string][]string{"A2": {first.Booking.ID, second.Booking.ID}})

		// A cancelled booking no longer claims its seats.
		mustCancel(t, store, first.Booking.ID)
		checkDoubleBooked(t, store, sc.ID, map[string][]string{})
	})

	t.Run("fenced writes never double-book", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		mustBook(t, store, newWrite(sc, "A1", "A2"))
		mustBook(t, store, newWrite(sc, "A3"))
		checkDoubleBooked(t, store, sc.ID, map[string][]string{})
	})

	t.Run("blind write ignores stale fences but records newer ones", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		w := newWrite(sc, "A1")
		w.Guard = reservation.GuardOff
		w.Fences = map[string]int64{"A1": 7}
		mustBook(t, store, w)
		older := newWrite(sc, "A1")
		older.Guard = reservation.GuardOff
		older.Fences = map[string]int64{"A1": 2}
		mustBook(t, store, older)
		mustCancel(t, store, older.Booking.ID)
		fenced := newWrite(sc, "A1")
		fenced.Fences = map[string]int64{"A1": 7}
		if err := store.Book(ctx, fenced); !errors.Is(err, reservation.ErrStaleToken) {
			t.Fatalf("fenced Book with fence 7 after a blind write of 7: %v, want ErrStaleToken", err)
		}
	})
}

func testSeatsInUse(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	store, ctx := newStore(t), t.Context()
	sc := newScreening(t, store)
	mustBook(t, store, newWrite(sc, "A1", "C3"))
	mustHold(t, store, newHoldWrite(sc, time.Minute, "B1", "B3"))

	tests := []struct {
		name        string
		seats       []string
		taken, held []string
	}{
		{"booked seats in the order asked", []string{"C3", "B2", "A1"}, []string{"C3", "A1"}, nil},
		{"booked and held, each in the order asked", []string{"B3", "C3", "A2", "B1", "A1"}, []string{"C3", "A1"}, []string{"B3", "B1"}},
		{"free seats only", []string{"A2", "Z9"}, nil, nil},
		{"nothing asked", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken, held, err := store.SeatsInUse(ctx, sc.ID, tt.seats)
			if err != nil {
				t.Fatalf("SeatsInUse: %v", err)
			}
			// slices.Equal takes nil and empty alike.
			if !slices.Equal(taken, tt.taken) || !slices.Equal(held, tt.held) {
				t.Fatalf("SeatsInUse(%v) = taken %v, held %v; want taken %v, held %v", tt.seats, taken, held, tt.taken, tt.held)
			}
		})
	}

	t.Run("booked seats of an unknown screening are none", func(t *testing.T) {
		checkBooked(t, store, "no-such-"+uuid.NewString(), map[string]string{})
	})
}

// testCancelFrees checks that a cancel frees the seats its booking still holds.
func testCancelFrees(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("frees the seats", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		w := newWrite(sc, "A1", "A2")
		mustBook(t, store, w)
		mustCancel(t, store, w.Booking.ID)
		checkBooked(t, store, sc.ID, map[string]string{})
		got, _, err := store.Booking(ctx, w.Booking.ID)
		if err != nil {
			t.Fatalf("Booking: %v", err)
		}
		if got.Status != reservation.BookingCancelled {
			t.Errorf("status after Cancel = %q, want %q", got.Status, reservation.BookingCancelled)
		}
		mustBook(t, store, newWrite(sc, "A1", "A2"))
	})

	t.Run("frees only the seats the booking still holds", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		first := newWrite(sc, "A1", "A2")
		mustBook(t, store, first)
		second := newWrite(sc, "A2")
		second.Guard = reservation.GuardOff
		mustBook(t, store, second)
		mustCancel(t, store, first.Booking.ID)
		checkBooked(t, store, sc.ID, map[string]string{"A2": second.Booking.ID})
	})
}

// testCancelAgain checks that a second cancel changes nothing; an unknown booking
// is not found.
func testCancelAgain(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("twice changes nothing", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := newWrite(sc, "A1")
		mustBook(t, store, first)
		mustCancel(t, store, first.Booking.ID)
		next := newWrite(sc, "A1")
		mustBook(t, store, next)
		mustCancel(t, store, first.Booking.ID)
		checkBooked(t, store, sc.ID, map[string]string{"A1": next.Booking.ID})
		got, _, err := store.Booking(ctx, first.Booking.ID)
		if err != nil || got.Status != reservation.BookingCancelled {
			t.Fatalf("Booking after two cancels = %+v, %v; want cancelled", got, err)
		}
	})

	t.Run("unknown booking is not found", func(t *testing.T) {
		store := newStore(t)
		for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
			if err := store.Cancel(t.Context(), id); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("Cancel(%q) = %v, want ErrNotFound", id, err)
			}
			if _, _, err := store.Booking(t.Context(), id); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("Booking(%q) = %v, want ErrNotFound", id, err)
			}
		}
	})
}

func testIdempotency(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("record is stored with the booking", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		w := withKey(newWrite(sc, "A1"), "key-1")
		mustBook(t, store, w)
		checkIdempotent(t, store, sc.ID, *w.Idempotency)
	})

	t.Run("reused key is a conflict and writes nothing", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		first := withKey(newWrite(sc, "A1"), "key-1")
		mustBook(t, store, first)
		again := withKey(newWrite(sc, "A2"), "key-1")
		if err := store.Book(ctx, again); !errors.Is(err, reservation.ErrConflict) {
			t.Fatalf("Book with a used key: %v, want ErrConflict", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{"A1": first.Booking.ID})
		if _, _, err := store.Booking(ctx, again.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("Booking(refused) = %v, want ErrNotFound", err)
		}
		checkIdempotent(t, store, sc.ID, *first.Idempotency)
	})

	t.Run("same key on another screening is independent", func(t *testing.T) {
		store := newStore(t)
		one, two := newScreening(t, store), newScreening(t, store)
		w1 := withKey(newWrite(one, "A1"), "shared")
		w2 := withKey(newWrite(two, "A1"), "shared")
		mustBook(t, store, w1)
		mustBook(t, store, w2)
		for _, w := range []reservation.Write{w1, w2} {
			checkIdempotent(t, store, w.Booking.ScreeningID, *w.Idempotency)
		}
	})

	t.Run("unknown key is not found", func(t *testing.T) {
		store, ctx := newStore(t), t.Context()
		sc := newScreening(t, store)
		mustBook(t, store, newWrite(sc, "A1")) // a booking without a key
		if _, err := store.Idempotent(ctx, sc.ID, hash("never used")); !errors.Is(err, reservation.ErrNotFound) {
			t.Fatalf("Idempotent(unknown) = %v, want ErrNotFound", err)
		}
	})
}

func testCopies(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	store, ctx := newStore(t), t.Context()
	sc := newScreening(t, store)
	w := withKey(newWrite(sc, "A1", "A2"), "key")
	want := w.Booking
	want.Seats = slices.Clone(w.Booking.Seats)
	wantRecord := *w.Idempotency
	wantRecord.KeyHash = slices.Clone(w.Idempotency.KeyHash)
	wantRecord.SealedToken = slices.Clone(w.Idempotency.SealedToken)
	wantHash := slices.Clone(w.TokenHash)
	mustBook(t, store, w)

	// Change what was passed in, and what comes out.
	w.Booking.Seats[0] = "Z9"
	w.TokenHash[0] ^= 0xff
	w.Idempotency.SealedToken[0] ^= 0xff
	b, tokenHash, err := store.Booking(ctx, want.ID)
	if err != nil {
		t.Fatalf("Booking: %v", err)
	}
	b.Seats[1] = "Z8"
	tokenHash[0] ^= 0xff
	booked, err := store.BookedSeats(ctx, sc.ID)
	if err != nil {
		t.Fatalf("BookedSeats: %v", err)
	}
	booked["A3"] = want.ID
	rec, err := store.Idempotent(ctx, sc.ID, wantRecord.KeyHash)
	if err != nil {
		t.Fatalf("Idempotent: %v", err)
	}
	rec.SealedToken[0] ^= 0xff

	got, gotHash, err := store.Booking(ctx, want.ID)
	if err != nil {
		t.Fatalf("Booking: %v", err)
	}
	checkBooking(t, got, want)
	if !bytes.Equal(gotHash, wantHash) {
		t.Errorf("token hash is %x after the caller changed its copies, want %x", gotHash, wantHash)
	}
	checkBooked(t, store, sc.ID, map[string]string{"A1": want.ID, "A2": want.ID})
	checkIdempotent(t, store, sc.ID, wantRecord)
}

func testConcurrency(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	// No lock in front of the store here: only the guard keeps the seats.
	t.Run("fence guard alone gives a seat to exactly one of many", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		const n = 50
		writes := make([]reservation.Write, n)
		for i := range writes {
			writes[i] = newWrite(sc, "A1")
		}
		errs := bookAll(t, store, writes)
		won := onlyWinner(t, "booking", writes, errs, reservation.ErrSeatTaken)
		checkBooked(t, store, sc.ID, map[string]string{"A1": won})
	})

	t.Run("overlapping bookings never half-book or deadlock", func(t *testing.T) {
		store := newStore(t)
		const rounds, n = 5, 20
		seats := []string{"A1", "A2", "A3", "A4", "A5", "A6"}
		for range rounds {
			sc := newScreening(t, store)
			// Booking i takes three adjacent seats, every other one in
			// reverse order, so that two bookings reach their shared
			// seats in opposite orders.
			writes := make([]reservation.Write, n)
			for i := range writes {
				set := slices.Clone(seats[i%4 : i%4+3])
				if i%2 == 1 {
					slices.Reverse(set)
				}
				writes[i] = newWrite(sc, set...)
			}
			errs := bookAll(t, store, writes)
			checkNoOverlap(t, store, sc.ID, writes, errs)
		}
	})
}

// bookAll runs every write in a goroutine of its own, released together,
// and returns their errors. It fails t if they have not all returned within
// a minute, which is how a deadlock shows.
func bookAll(t *testing.T, store reservation.Store, writes []reservation.Write) []error {
	t.Helper()
	return runAll(t, len(writes), func(i int) error { return store.Book(t.Context(), writes[i]) })
}

// checkIdempotent checks that the store has want as the record of its
// key on the screening.
func checkIdempotent(t *testing.T, store reservation.Store, screeningID string, want reservation.IdempotencyRecord) {
	t.Helper()
	got, err := store.Idempotent(t.Context(), screeningID, want.KeyHash)
	if err != nil {
		t.Fatalf("Idempotent: %v", err)
	}
	checkRecord(t, got, want)
}

// onlyWinner checks the outcome of concurrent writes of the same seats:
// exactly one succeeded, and every other was refused with refusal. It
// returns the booking id of the one that succeeded. what names a write in
// the messages: "booking", "confirm".
func onlyWinner(t *testing.T, what string, writes []reservation.Write, errs []error, refusal error) string {
	t.Helper()
	var won []string
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, writes[i].Booking.ID)
		case !errors.Is(err, refusal):
			t.Errorf("%s %d: %v, want success or %v", what, i, err, refusal)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d of %d concurrent writes (%s) of the same seats succeeded, want exactly 1", len(won), len(writes), what)
	}
	return won[0]
}

// checkNoOverlap checks the outcome of concurrent bookings: every booking
// that succeeded holds all its seats, every one that failed was refused
// because of a taken seat and holds none, and no seat went to two.
func checkNoOverlap(t *testing.T, store reservation.Store, screeningID string, writes []reservation.Write, errs []error) {
	t.Helper()
	ctx := t.Context()
	want := map[string]string{}
	for i, w := range writes {
		id := w.Booking.ID
		if errs[i] != nil {
			if !errors.Is(errs[i], reservation.ErrSeatTaken) {
				t.Errorf("booking %d: %v, want success or ErrSeatTaken", i, errs[i])
			}
			if _, _, err := store.Booking(ctx, id); !errors.Is(err, reservation.ErrNotFound) {
				t.Errorf("refused booking %d was stored (Booking: %v)", i, err)
			}
			continue
		}
		for _, seat := range w.Booking.Seats {
			if other, ok := want[seat]; ok {
				t.Errorf("seat %s confirmed to two bookings, %s and %s", seat, other, id)
			}
			want[seat] = id
		}
	}
	if len(want) == 0 {
		t.Errorf("no booking succeeded")
	}
	checkBooked(t, store, screeningID, want)
}

// screeningValue returns a screening with a fresh id, not yet stored.
func screeningValue() reservation.Screening {
	return reservation.Screening{
		ID:           "storetest-" + uuid.NewString(),
		Movie:        "The Third Man",
		StartsAt:     time.Date(2030, 5, 17, 20, 15, 0, 0, time.UTC),
		Rows:         26,
		SeatsPerRow:  100,
		Lock:         reservation.LockKeyedRedis,
		Guard:        reservation.GuardFence,
		PaymentDelay: 1500 * time.Millisecond,
		HoldTTL:      7 * time.Minute,
	}
}

// newScreening stores a screening with a fresh id.
func newScreening(t *testing.T, store reservation.Store) reservation.Screening {
	t.Helper()
	sc := screeningValue()
	if err := store.CreateScreening(t.Context(), sc); err != nil {
		t.Fatalf("CreateScreening: %v", err)
	}
	return sc
}

// newWrite returns a fenced write of a new booking of the seats, with no
// fencing tokens.
func newWrite(sc reservation.Screening, seats ...string) reservation.Write {
	id := uuid.NewString()
	return reservation.Write{
		Booking: reservation.Booking{
			ID:          id,
			ScreeningID: sc.ID,
			Seats:       seats,
			Customer:    "alice",
			Status:      reservation.BookingConfirmed,
			CreatedAt:   time.Now().UTC().Truncate(time.Microsecond),
		},
		TokenHash: hash("token of " + id),
		Guard:     reservation.GuardFence,
	}
}

// withKey adds an idempotency record for the key to w.
func withKey(w reservation.Write, key string) reservation.Write {
	w.Idempotency = &reservation.IdempotencyRecord{
		KeyHash:     hash(key),
		RequestHash: hash(fmt.Sprint(w.Booking.Seats)),
		BookingID:   w.Booking.ID,
		SealedToken: hash("sealed " + w.Booking.ID),
		CreatedAt:   w.Booking.CreatedAt,
	}
	return w
}

func hash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// mustCancel cancels booking id, failing t if the store refuses.
func mustCancel(t *testing.T, store reservation.Store, id string) {
	t.Helper()
	if err := store.Cancel(t.Context(), id); err != nil {
		t.Fatalf("Cancel(%s): %v", id, err)
	}
}

func mustBook(t *testing.T, store reservation.Store, w reservation.Write) {
	t.Helper()
	if err := store.Book(t.Context(), w); err != nil {
		t.Fatalf("Book(%v): %v", w.Booking.Seats, err)
	}
}

// checkTaken checks that err is a *SeatsTakenError naming exactly seats.
func checkTaken(t *testing.T, err error, seats ...string) {
	t.Helper()
	checkSeatsError(t, err, reservation.ErrSeatTaken, func(e *reservation.SeatsTakenError) []string { return e.Seats }, seats)
}

// checkSeatsError checks that err is an E, matches kind, and names exactly
// seats, which listed reads from the E.
func checkSeatsError[E error](t *testing.T, err, kind error, listed func(E) []string, seats []string) {
	t.Helper()
	var e E
	if !errors.As(err, &e) {
		t.Fatalf("%v, want a %T", err, e)
	}
	if !errors.Is(err, kind) {
		t.Errorf("errors.Is(%v, %v) is false", err, kind)
	}
	if got := listed(e); !slices.Equal(got, seats) {
		t.Errorf("%T lists %v, want %v", e, got, seats)
	}
}

func checkBooked(t *testing.T, store reservation.Store, screeningID string, want map[string]string) {
	t.Helper()
	got, err := store.BookedSeats(t.Context(), screeningID)
	if err != nil {
		t.Fatalf("BookedSeats: %v", err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("BookedSeats = %v, want %v", got, want)
	}
}

func checkBooking(t *testing.T, got, want reservation.Booking) {
	t.Helper()
	if got.ID != want.ID || got.ScreeningID != want.ScreeningID || got.Customer != want.Customer ||
		got.Status != want.Status || !slices.Equal(got.Seats, want.Seats) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("Booking = %+v, want %+v", got, want)
	}
}

func checkRecord(t *testing.T, got, want reservation.IdempotencyRecord) {
	t.Helper()
	if !bytes.Equal(got.KeyHash, want.KeyHash) || !bytes.Equal(got.RequestHash, want.RequestHash) ||
		got.BookingID != want.BookingID || !bytes.Equal(got.SealedToken, want.SealedToken) ||
		!got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("IdempotencyRecord = %+v, want %+v", got, want)
	}
}

// utc returns sc with its start in UTC, so that screenings from stores that
// return other locations compare with ==.
func utc(sc reservation.Screening) reservation.Screening {
	sc.StartsAt = sc.StartsAt.UTC()
	return sc
}

// checkDoubleBooked fails t unless the seats claimed by more than one
// confirmed booking are exactly want.
func checkDoubleBooked(t *testing.T, store reservation.Store, screeningID string, want map[string][]string) {
	t.Helper()
	got, err := store.DoubleBookedSeats(t.Context(), screeningID)
	if err != nil {
		t.Fatalf("DoubleBookedSeats: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("double-booked seats %v, want %v", got, want)
	}
	for seat, ids := range want {
		if !slices.Equal(got[seat], ids) {
			t.Errorf("seat %s claimed by %v, want %v (oldest first)", seat, got[seat], ids)
		}
	}
}
