package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/reservation"
)

// testPayments checks the payment records: a booking books its payment in
// its own transaction, a settle holds the payment so that it and a booking
// of it never both happen, and SettleDue settles only what is due and not
// held elsewhere.
func testPayments(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("a write books its pending payment", func(t *testing.T) {
		store := newStore(t)
		w, p := bookPaid(t, store)
		after := settle(t, store, p.ID, neverSettle(t, "a booked payment"))
		if after.Status != reservation.PaymentBooked || after.ChargeID != w.ChargeID {
			t.Errorf("payment after its booking: status %q charge %q, want booked with %q", after.Status, after.ChargeID, w.ChargeID)
		}
	})
	t.Run("a settled payment books nothing", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		w, p := paidWrite(t, store, sc, time.Hour, "A1")
		if got := settle(t, store, p.ID, refundAs(reservation.PaymentVoided)); got.Status != reservation.PaymentVoided {
			t.Fatalf("settled payment is %q, want voided", got.Status)
		}
		if err := store.Book(t.Context(), w); !errors.Is(err, reservation.ErrPaymentSettled) {
			t.Fatalf("Book with a voided payment: %v, want ErrPaymentSettled", err)
		}
		checkBooked(t, store, sc.ID, map[string]string{})
	})
	t.Run("a payment pays for its own booking only", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		w, _ := paidWrite(t, store, sc, time.Hour, "A1")
		w.Booking.ID = uuid.NewString()
		if err := store.Book(t.Context(), w); !errors.Is(err, reservation.ErrPaymentSettled) {
			t.Fatalf("Book with another booking's payment: %v, want ErrPaymentSettled", err)
		}
	})
	t.Run("a refused booking leaves its payment pending", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		mustBook(t, store, newWrite(sc, "A1"))
		w, p := paidWrite(t, store, sc, time.Hour, "A1")
		checkTaken(t, store.Book(t.Context(), w), "A1")
		if got := settle(t, store, p.ID, refundAs(reservation.PaymentRefunded)); got.Status != reservation.PaymentRefunded {
			t.Errorf("payment of a refused booking settled as %q, want refunded", got.Status)
		}
	})
	t.Run("pending payments are found by idempotency key", func(t *testing.T) { testPaymentKeys(t, newStore(t)) })
	t.Run("a booking waits for a settle in progress", func(t *testing.T) { testSettleExcludesBook(t, newStore(t)) })
	t.Run("settle due", func(t *testing.T) { testSettleDue(t, newStore(t)) })
	testPaymentOutcomes(t, newStore)
}

// testPaymentOutcomes checks what a cancel and a hold's confirm do to a
// payment.
func testPaymentOutcomes(t *testing.T, newStore func(t *testing.T) reservation.Store) {
	t.Run("a cancel makes the payment owed", func(t *testing.T) {
		store := newStore(t)
		w, p := bookPaid(t, store)
		mustCancel(t, store, w.Booking.ID)
		var seen []reservation.Payment
		n, err := store.SettleDue(t.Context(), 100, func(_ context.Context, q reservation.Payment) (reservation.PaymentStatus, error) {
			seen = append(seen, q)
			return reservation.PaymentRefunded, nil
		})
		if err != nil || n != 1 || len(seen) != 1 || seen[0].ID != p.ID || seen[0].Status != reservation.PaymentRefunding {
			t.Fatalf("SettleDue after a cancel: %d settled (%v), saw %+v; want the cancelled booking's payment, refunding", n, err, seen)
		}
		mustCancel(t, store, w.Booking.ID)
		if n, _ := store.SettleDue(t.Context(), 100, neverSettle(t, "a payment refunded once")); n != 0 {
			t.Errorf("a second cancel made %d payments due again, want 0", n)
		}
	})
	t.Run("a confirmed hold books its payment", func(t *testing.T) {
		store := newStore(t)
		sc := newScreening(t, store)
		h := mustHold(t, store, newHoldWrite(sc, time.Hour, "B1"))
		w, p := paidWrite(t, store, sc, time.Hour, "B1")
		if err := store.ConfirmHold(t.Context(), h.ID, w); err != nil {
			t.Fatalf("ConfirmHold with a payment: %v", err)
		}
		if got := settle(t, store, p.ID, neverSettle(t, "a booked payment")); got.Status != reservation.PaymentBooked {
			t.Errorf("payment of a confirmed hold is %q, want booked", got.Status)
		}
		h2 := mustHold(t, store, newHoldWrite(sc, time.Hour, "B2"))
		w2, p2 := paidWrite(t, store, sc, time.Hour, "B2")
		settle(t, store, p2.ID, refundAs(reservation.PaymentVoided))
		if err := store.ConfirmHold(t.Context(), h2.ID, w2); !errors.Is(err, reservation.ErrPaymentSettled) {
			t.Fatalf("ConfirmHold with a voided payment: %v, want ErrPaymentSettled", err)
		}
		if got := mustRead(t, store, h2.ID); got.Status != reservation.HoldHeld {
			t.Errorf("hold after a refused confirm is %q, want still held", got.Status)
		}
	})
}

func testPaymentKeys(t *testing.T, store reservation.Store) {
	sc := newScreening(t, store)
	p := newPayment(sc, "A1")
	p.KeyHash = hash("key 1")
	if err := store.CreatePayment(t.Context(), p, time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := store.PendingPayment(t.Context(), sc.ID, hash("key 1"))
	if err != nil || got.ID != p.ID || got.BookingID != p.BookingID || got.Status != reservation.PaymentPending {
		t.Fatalf("PendingPayment = %+v, %v; want payment %s, pending", got, err, p.ID)
	}
	if got.Fences["A1"] != 7 {
		t.Errorf("pending payment's fences %v, want A1: 7 as recorded", got.Fences)
	}
	twin := newPayment(sc, "A1")
	twin.KeyHash = hash("key 1")
	if err := store.CreatePayment(t.Context(), twin, time.Hour); !errors.Is(err, reservation.ErrConflict) {
		t.Fatalf("second pending payment with one key: %v, want ErrConflict", err)
	}
	if err := store.CreatePayment(t.Context(), p, time.Hour); !errors.Is(err, reservation.ErrConflict) {
		t.Fatalf("payment id used twice: %v, want ErrConflict", err)
	}
	settle(t, store, p.ID, refundAs(reservation.PaymentRefunded))
	if _, err := store.PendingPayment(t.Context(), sc.ID, hash("key 1")); !errors.Is(err, reservation.ErrNotFound) {
		t.Fatalf("PendingPayment after its settle: %v, want ErrNotFound", err)
	}
	if err := store.CreatePayment(t.Context(), twin, time.Hour); err != nil {
		t.Errorf("a new payment under a key whose payment was settled: %v, want it recorded", err)
	}
	if err := store.CreatePayment(t.Context(), newPayment(reservation.Screening{ID: "storetest-nowhere"}, "A1"), time.Hour); !errors.Is(err, reservation.ErrNotFound) {
		t.Errorf("payment for an unknown screening: %v, want ErrNotFound", err)
	}
}

// testSettleExcludesBook starts a settle that holds its payment until told,
// books the payment meanwhile, and checks that the booking waited for the
// settle and was then refused: a refund and a booking of one payment never
// both happen.
func testSettleExcludesBook(t *testing.T, store reservation.Store) {
	sc := newScreening(t, store)
	w, p := paidWrite(t, store, sc, time.Hour, "A1")
	finish, settled := settleHeld(t, store, p.ID, reservation.PaymentRefunded)
	booked := make(chan error, 1)
	go func() { booked <- store.Book(t.Context(), w) }()
	select {
	case err := <-booked:
		finish()
		t.Fatalf("Book of a payment being settled returned %v before the settle ended; it must wait", err)
	case <-time.After(200 * time.Millisecond):
		// Still waiting, as it must (a booking that did not wait would
		// have answered by now; a slow one only makes this pass).
	}
	finish()
	if err := receiveWithin(t, settled, "the settle to end"); err != nil {
		t.Fatalf("SettlePayment: %v", err)
	}
	if err := receiveWithin(t, booked, "the booking to end"); !errors.Is(err, reservation.ErrPaymentSettled) {
		t.Fatalf("Book after the settle refunded its payment: %v, want ErrPaymentSettled", err)
	}
	checkBooked(t, store, sc.ID, map[string]string{})
}

func testSettleDue(t *testing.T, store reservation.Store) {
	sc := newScreening(t, store)
	later := newPayment(sc, "A1")
	due1, due2 := newPayment(sc, "A2"), newPayment(sc, "A3")
	for _, c := range []struct {
		p  reservation.Payment
		in time.Duration
	}{{later, time.Hour}, {due1, 0}, {due2, 0}} {
		if err := store.CreatePayment(t.Context(), c.p, c.in); err != nil {
			t.Fatal(err)
		}
	}
	// One due payment is held by a settle elsewhere: SettleDue skips it.
	finish, elsewhere := settleHeld(t, store, due1.ID, reservation.PaymentVoided)
	var mu sync.Mutex
	var seen []string
	n, err := store.SettleDue(t.Context(), 100, func(_ context.Context, p reservation.Payment) (reservation.PaymentStatus, error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p.ID)
		return reservation.PaymentVoided, nil
	})
	finish()
	if err := receiveWithin(t, elsewhere, "the other settle to end"); err != nil {
		t.Fatal(err)
	}
	if err != nil || n != 1 || len(seen) != 1 || seen[0] != due2.ID {
		t.Fatalf("SettleDue settled %d (%v), called for %v; want only %s (due, not held elsewhere, %s not due)", n, err, seen, due2.ID, later.ID)
	}
	// A settle that fails leaves the payment open, put off for a while.
	failing := newPayment(sc, "A4")
	if err := store.CreatePayment(t.Context(), failing, 0); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("provider down")
	n, err = store.SettleDue(t.Context(), 100, func(context.Context, reservation.Payment) (reservation.PaymentStatus, error) { return "", boom })
	if n != 0 || !errors.Is(err, boom) {
		t.Fatalf("SettleDue with a failing settle: %d settled, %v; want 0 and the settle's error", n, err)
	}
	if n, err := store.SettleDue(t.Context(), 100, neverSettle(t, "a payment put off after a failed settle")); n != 0 || err != nil {
		t.Fatalf("SettleDue right after a failed settle: %d, %v; want the payment put off", n, err)
	}
	if got := settle(t, store, failing.ID, refundAs(reservation.PaymentVoided)); got.Status != reservation.PaymentVoided {
		t.Errorf("the put-off payment settled as %q, want voided", got.Status)
	}
}

// newPayment returns a payment of the seats for a new booking id, with a
// fence of 7 on each seat.
func newPayment(sc reservation.Screening, seats ...string) reservation.Payment {
	fences := make(map[string]int64, len(seats))
	for _, s := range seats {
		fences[s] = 7
	}
	return reservation.Payment{
		ID: uuid.NewString(), BookingID: uuid.NewString(), ScreeningID: sc.ID,
		Seats: seats, Customer: "alice", Fences: fences,
	}
}

// paidWrite records a pending payment and returns the write of its
// booking, charged as ch_<payment id>.
func paidWrite(t *testing.T, store reservation.Store, sc reservation.Screening, settleIn time.Duration, seats ...string) (reservation.Write, reservation.Payment) {
	t.Helper()
	p := newPayment(sc, seats...)
	if err := store.CreatePayment(t.Context(), p, settleIn); err != nil {
		t.Fatalf("CreatePayment: %v", err)
	}
	w := newWrite(sc, seats...)
	w.Booking.ID = p.BookingID
	w.PaymentID, w.ChargeID = p.ID, "ch_"+p.ID
	return w, p
}

// bookPaid books seat A1 of a new screening with a write that carries its
// payment, pending for an hour, and returns the write and the payment.
func bookPaid(t *testing.T, store reservation.Store) (reservation.Write, reservation.Payment) {
	t.Helper()
	w, p := paidWrite(t, store, newScreening(t, store), time.Hour, "A1")
	mustBook(t, store, w)
	return w, p
}

// settle settles the payment with f and returns it as it stands after.
func settle(t *testing.T, store reservation.Store, id string, f reservation.SettleFunc) reservation.Payment {
	t.Helper()
	p, err := store.SettlePayment(t.Context(), id, f)
	if err != nil {
		t.Fatalf("SettlePayment(%s): %v", id, err)
	}
	return p
}

// refundAs returns a SettleFunc that settles every payment as status.
func refundAs(status reservation.PaymentStatus) reservation.SettleFunc {
	return func(context.Context, reservation.Payment) (reservation.PaymentStatus, error) { return status, nil }
}

// neverSettle returns a SettleFunc that fails t: it is for a payment that
// must not be settled (why says which).
func neverSettle(t *testing.T, why string) reservation.SettleFunc {
	return func(_ context.Context, p reservation.Payment) (reservation.PaymentStatus, error) {
		t.Errorf("settle called for payment %s (%s), want it left alone", p.ID, why)
		return reservation.PaymentRefunded, nil
	}
}

// receiveWithin receives from c, failing t after 10s with what it waited for.
// settleHeld starts a settle of payment id that, once it holds the
// payment, waits for finish before it settles the payment as status. It
// returns when the settle holds the payment; settled receives the settle's
// error. finish is also called when the test ends, so that the settle
// never outlives it.
func settleHeld(t *testing.T, store reservation.Store, id string, status reservation.PaymentStatus) (finish func(), settled <-chan error) {
	t.Helper()
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := store.SettlePayment(t.Context(), id, func(context.Context, reservation.Payment) (reservation.PaymentStatus, error) {
			close(holding)
			<-release
			return status, nil
		})
		done <- err
	}()
	finish = sync.OnceFunc(func() { close(release) })
	t.Cleanup(finish)
	receiveWithin(t, holding, "a settle to hold payment "+id)
	return finish, done
}

// receiveWithin returns the next value from c, failing t when none comes
// within 10s; what names what it waits for.
func receiveWithin[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	return wait.Recv(t, c, 10*time.Second, what)
}
