package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/payment"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// withProvider returns a service that charges through a real Provider over
// HTTP, and the provider.
func withProvider(t *testing.T, l *fakeLocker, check bool) (*reservation.Service, reservation.Screening, *payment.Provider) {
	t.Helper()
	p := payment.NewProvider(payment.ProviderOptions{CheckFences: check})
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	c, err := payment.NewClient(srv.URL, payment.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, sc := newService(t, l, reservation.Options{Payments: c})
	return svc, sc, p
}

func book(svc *reservation.Service, screening, customer string, seats ...string) (reservation.Confirmation, error) {
	return svc.Book(context.Background(), reservation.BookRequest{ScreeningID: screening, Seats: seats, Customer: customer})
}

// seatFree fails t when the seat is not free.
func seatFree(t *testing.T, svc *reservation.Service, screening, seat string) {
	t.Helper()
	_, seats, err := svc.Seats(context.Background(), screening)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seats {
		if s.ID == seat && s.Status != reservation.SeatFree {
			t.Errorf("seat %s is %s, want free: nothing may be booked", seat, s.Status)
		}
	}
}

func TestPaymentChargesEveryConfirmedBooking(t *testing.T) {
	svc, sc, p := withProvider(t, &fakeLocker{fence: 3}, false)
	if _, err := book(svc, sc.ID, "alice", "A1", "A2"); err != nil {
		t.Fatal(err)
	}
	if _, err := book(svc, sc.ID, "bob", "A2"); !errors.Is(err, reservation.ErrSeatTaken) {
		t.Fatalf("second booking of A2: %v, want ErrSeatTaken", err)
	}
	if got := p.Stats(); got.Charges != 1 || got.Refunds != 0 {
		t.Errorf("stats %+v, want 1 charge (a taken seat is refused before paying) and no refund", got)
	}
}

// A writer whose fenced write is refused after its charge went through is
// refunded before it answers. A provider that checks fences refuses the
// charge itself, and its payment is voided. Either way, once the
// reconciler has refunded the cancelled booking too, charges minus refunds
// is the confirmed bookings: none.
func TestPaymentStaleHolder(t *testing.T) {
	for _, tt := range []struct {
		name        string
		checkFences bool
		refused     int64
	}{
		{"refunded when the guarded write refuses", false, 0},
		{"refused by a provider that checks fences", true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &fakeLocker{fence: 10}
			svc, sc, p := withProvider(t, l, tt.checkFences)
			first, err := book(svc, sc.ID, "new holder", "A1")
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Cancel(context.Background(), first.Booking.ID, first.Token); err != nil {
				t.Fatal(err)
			}
			l.fence = 9 // a holder from before, whose lease ran out
			if _, err := book(svc, sc.ID, "stale holder", "A1"); !errors.Is(err, reservation.ErrLockLost) {
				t.Fatalf("stale booking: %v, want ErrLockLost", err)
			}
			settleDue(t, svc)
			got := p.Stats()
			if got.Charges-got.Refunds != 0 || got.RefusedStale != tt.refused || got.Overlaps != 0 {
				t.Errorf("stats %+v, want charges - refunds = 0 confirmed, %d refused stale, no overlap", got, tt.refused)
			}
			seatFree(t, svc, sc.ID, "A1")
		})
	}
}

// settleDue runs one round of the reconciler and fails t on its error.
func settleDue(t *testing.T, svc *reservation.Service) int {
	t.Helper()
	n, err := svc.SettleDue(context.Background())
	if err != nil {
		t.Fatalf("SettleDue: %v", err)
	}
	return n
}

// A charge in progress when the lock is lost is cut off and voided by its
// payment's id at once: the provider charges nothing, and another holder's
// charge for the seat would not overlap it.
func TestPaymentLostLockEndsTheCharge(t *testing.T) {
	l := &fakeLocker{lost: make(chan struct{})}
	svc, _, p := withProvider(t, l, false)
	ctx := context.Background()
	if _, err := svc.CreateScreening(ctx, reservation.NewScreening{ID: "slow", Movie: "M", Rows: 1, SeatsPerRow: 1, PaymentDelay: ptr(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, func() { close(l.lost) }) // the fault: the lease runs out mid-charge
	done := make(chan error, 1)
	go func() {
		_, err := book(svc, "slow", "a", "A1")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, reservation.ErrLockLost) {
			t.Fatalf("Book: %v, want ErrLockLost", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the one-minute charge went on for 30s after the lock was lost")
	}
	if got := p.Stats(); got.Charges != 0 || got.Voids != 1 {
		t.Errorf("stats %+v: want the charge of a holder that lost its lock voided (1 void, 0 charges)", got)
	}
	seatFree(t, svc, "slow", "A1")
}

// A holder that already knows its lock is lost (its watchdog gave up while
// it checked the seats) does not start a charge: the simulated payment
// aborts at once then, and a real one must not take money only to give it
// back (or, from a fence-checking provider, get it refused).
func TestPaymentNotStartedAfterTheLockWasLost(t *testing.T) {
	l := &fakeLocker{lost: make(chan struct{})}
	close(l.lost)
	svc, sc, p := withProvider(t, l, false)
	if _, err := book(svc, sc.ID, "a", "A1"); !errors.Is(err, reservation.ErrLockLost) {
		t.Fatalf("Book: %v, want ErrLockLost", err)
	}
	if got := p.Stats(); got.Charges != 0 || got.MaxConcurrent != 0 {
		t.Errorf("stats %+v: a holder that knew its lock was lost started a charge", got)
	}
	seatFree(t, svc, sc.ID, "A1")
}

func TestPaymentProviderDownIsUnavailable(t *testing.T) {
	for name, handler := range map[string]http.HandlerFunc{
		"refusing connections": nil,
		"failing":              func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
		"answering nonsense":   func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) },
	} {
		t.Run(name, func(t *testing.T) {
			url := "http://127.0.0.1:1"
			if handler != nil {
				srv := httptest.NewServer(handler)
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			c, err := payment.NewClient(url, payment.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			svc, sc := newService(t, &fakeLocker{}, reservation.Options{Payments: c})
			if _, err := book(svc, sc.ID, "a", "A1"); !errors.Is(err, reservation.ErrUnavailable) {
				t.Fatalf("Book: %v, want ErrUnavailable", err)
			}
			seatFree(t, svc, sc.ID, "A1")
		})
	}
}

// flakyStore is a memory store whose Book fails once, as a Postgres store
// does when the connection dies during COMMIT: after writing the booking
// when committed is set (the answer was lost), or without writing it.
// While settleDown is set, settling a payment fails too, which leaves the
// payment pending, as a crash would.
type flakyStore struct {
	*memory.Store
	committed  bool
	settleDown atomic.Bool
	failed     atomic.Bool
}

func (s *flakyStore) Book(ctx context.Context, w reservation.Write) error {
	if s.failed.Swap(true) {
		return s.Store.Book(ctx, w)
	}
	if s.committed {
		if err := s.Store.Book(ctx, w); err != nil {
			return err
		}
	}
	return fmt.Errorf("connection reset during COMMIT: %w", reservation.ErrWriteInDoubt)
}

func (s *flakyStore) SettlePayment(ctx context.Context, id string, f reservation.SettleFunc) (reservation.Payment, error) {
	if s.settleDown.Load() {
		// Not ErrUnavailable, which the service would try again for a
		// while before it leaves the payment to the reconciler.
		return reservation.Payment{}, errors.New("the store refused the settle")
	}
	return s.Store.SettlePayment(ctx, id, f)
}

// paidService returns a service over store that charges through a real
// provider over HTTP, a one-row screening, and the provider.
func paidService(t *testing.T, store reservation.Store) (*reservation.Service, reservation.Screening, *payment.Provider) {
	t.Helper()
	p := payment.NewProvider(payment.ProviderOptions{})
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	c, err := payment.NewClient(srv.URL, payment.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc := reservation.NewService(store, reservation.Options{Payments: c,
		Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{fence: 3}}, DefaultLock: reservation.LockRedis})
	sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 2})
	if err != nil {
		t.Fatal(err)
	}
	return svc, sc, p
}

// A write whose commit went unanswered is decided by its payment: the
// settle holds the payment and finds it booked (the commit happened: the
// booking stands and keeps its charge) or pending (it did not: the charge
// is refunded, the answer is 503).
func TestPaymentWriteInDoubt(t *testing.T) {
	for _, committed := range []bool{true, false} {
		t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
			store := &flakyStore{Store: memory.New(), committed: committed}
			svc, sc, p := paidService(t, store)
			conf, err := book(svc, sc.ID, "ann", "A1")
			stats := p.Stats()
			if committed {
				if err != nil || conf.Booking.ID == "" {
					t.Fatalf("Book: %v, want the booking that was committed", err)
				}
				if stats.Charges != 1 || stats.Refunds != 0 {
					t.Errorf("stats %+v: want the committed booking's charge kept", stats)
				}
				return
			}
			if !errors.Is(err, reservation.ErrUnavailable) {
				t.Fatalf("Book: %v, want ErrUnavailable", err)
			}
			if stats.Charges != 1 || stats.Refunds != 1 {
				t.Errorf("stats %+v: want the charge of the booking that was not written refunded", stats)
			}
			seatFree(t, svc, sc.ID, "A1")
		})
	}
}

// A booking whose process could not settle its payment (here the store was
// out of reach; a crash between the charge and the commit leaves the same)
// is retried with the same Idempotency-Key: the retry finds the pending
// payment and charges under its id again, which the provider answers with
// the first charge. One charge, one booking.
func TestPaymentIdempotentRetryChargesOnce(t *testing.T) {
	store := &flakyStore{Store: memory.New()}
	store.settleDown.Store(true)
	svc, sc, p := paidService(t, store)
	req := reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "ann", IdempotencyKey: "k-1"}
	if _, err := svc.Book(context.Background(), req); !errors.Is(err, reservation.ErrUnavailable) {
		t.Fatalf("first attempt: %v, want ErrUnavailable", err)
	}
	store.settleDown.Store(false)
	conf, err := svc.Book(context.Background(), req)
	if err != nil {
		t.Fatalf("retry with the same key: %v", err)
	}
	if got := p.Stats(); got.Charges != 1 || got.Refunds != 0 {
		t.Errorf("stats %+v: want the first attempt's charge used by the retry, nothing charged twice", got)
	}
	again, err := svc.Book(context.Background(), req)
	if err != nil || again.Booking.ID != conf.Booking.ID {
		t.Errorf("a third attempt answered %v, %v; want the retry's booking %s again", again.Booking.ID, err, conf.Booking.ID)
	}
}

// A client that hangs up during its payment does not cut the charge off:
// the charge, the write and the release belong to the service, so the
// booking is made and paid, and the lock is held until the charge answered
// (no second holder's charge overlaps it).
func TestPaymentClientHangsUp(t *testing.T) {
	p := payment.NewProvider(payment.ProviderOptions{})
	charging := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/charges" {
			once.Do(func() { close(charging) })
		}
		p.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := payment.NewClient(srv.URL, payment.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := newService(t, &fakeLocker{fence: 5}, reservation.Options{Payments: c})
	sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 2, PaymentDelay: ptr(300 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-charging
		cancel() // the client hangs up mid-charge
	}()
	conf, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "ann"})
	cancel()
	if err != nil {
		t.Fatalf("Book whose client hung up: %v, want the booking made all the same", err)
	}
	if got, err := svc.Booking(context.Background(), conf.Booking.ID); err != nil || got.Status != reservation.BookingConfirmed {
		t.Fatalf("booking after the hang-up: %+v, %v; want it confirmed", got, err)
	}
	if got := p.Stats(); got.Charges != 1 || got.Refunds != 0 || got.Overlaps != 0 {
		t.Errorf("stats %+v: want one charge, kept", got)
	}
}

// What a crashed or paused instance left (a payment recorded and charged,
// its booking never written) is settled by the reconciler of any instance
// once it is due, and only then: a refund by the payment's id.
func TestReconcilerSettlesWhatACrashLeft(t *testing.T) {
	clock := testenv.NewClock(time.Now())
	store := &flakyStore{Store: memory.NewWithClock(clock.Now)}
	store.settleDown.Store(true)
	svc, sc, p := paidService(t, store)
	if _, err := book(svc, sc.ID, "ann", "A1"); !errors.Is(err, reservation.ErrUnavailable) {
		t.Fatalf("Book: %v, want ErrUnavailable", err)
	}
	store.settleDown.Store(false)
	if n := settleDue(t, svc); n != 0 {
		t.Fatalf("the reconciler settled %d payments before they were due, want 0: the booking may still be writing", n)
	}
	clock.Advance(time.Minute)
	if n := settleDue(t, svc); n != 1 {
		t.Fatalf("the reconciler settled %d payments once due, want 1", n)
	}
	if got := p.Stats(); got.Charges != 1 || got.Refunds != 1 {
		t.Errorf("stats %+v: want the orphaned charge refunded", got)
	}
	if n := settleDue(t, svc); n != 0 {
		t.Errorf("a second round settled %d more, want 0", n)
	}
}
