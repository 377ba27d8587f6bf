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
// refunded before it answers: charges minus refunds is the confirmed
// bookings. A provider that checks fences refuses the charge itself, and
// there is nothing to refund.
func TestPaymentStaleHolder(t *testing.T) {
	for _, tt := range []struct {
		name        string
		checkFences bool
		want        payment.Stats
	}{
		{"refunded when the guarded write refuses", false, payment.Stats{Charges: 2, Refunds: 1, MaxConcurrent: 1}},
		{"refused by a provider that checks fences", true, payment.Stats{Charges: 1, RefusedStale: 1, MaxConcurrent: 1}},
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
			if got := p.Stats(); got != tt.want {
				t.Errorf("stats %+v, want %+v", got, tt.want)
			}
			seatFree(t, svc, sc.ID, "A1")
		})
	}
}

func TestPaymentLostLockEndsTheCharge(t *testing.T) {
	l := &fakeLocker{lost: make(chan struct{})}
	svc, _, p := withProvider(t, l, false)
	ctx := context.Background()
	if _, err := svc.CreateScreening(ctx, reservation.NewScreening{ID: "slow", Movie: "M", Rows: 1, SeatsPerRow: 1, PaymentDelay: ptr(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, func() { close(l.lost) })
	start := time.Now()
	if _, err := book(svc, "slow", "a", "A1"); !errors.Is(err, reservation.ErrLockLost) {
		t.Fatalf("Book: %v, want ErrLockLost", err)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("the charge went on for %v after the lock was lost", waited)
	}
	if got := p.Stats(); got.Charges != 0 {
		t.Errorf("stats %+v: a charge whose caller lost its lock was made", got)
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
	if got := p.Stats(); got != (payment.Stats{}) {
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

// inDoubtStore is a memory store whose Book answers ErrWriteInDoubt, as a
// Postgres store does when the connection dies during COMMIT: after
// writing the booking when committed is set (the answer was lost), or
// without writing it (the commit never happened). While down is set, its
// reads are unavailable too.
type inDoubtStore struct {
	*memory.Store
	committed bool
	down      atomic.Int32 // reads that still fail before the store answers
}

func (s *inDoubtStore) Book(ctx context.Context, w reservation.Write) error {
	if s.committed {
		if err := s.Store.Book(ctx, w); err != nil {
			return err
		}
	}
	return fmt.Errorf("connection reset during COMMIT: %w", reservation.ErrWriteInDoubt)
}

func (s *inDoubtStore) Booking(ctx context.Context, id string) (reservation.Booking, []byte, error) {
	if s.down.Add(-1) >= 0 {
		return reservation.Booking{}, nil, fmt.Errorf("connection refused: %w", reservation.ErrUnavailable)
	}
	return s.Store.Booking(ctx, id)
}

// A write whose commit went unanswered is looked up before its charge is
// refunded: found, the booking stands and keeps its charge (a refund would
// leave a confirmed seat unpaid); not found, the charge is refunded and
// the answer is 503. The lookup waits out a store that is briefly away.
func TestPaymentWriteInDoubt(t *testing.T) {
	for _, committed := range []bool{true, false} {
		t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
			p := payment.NewProvider(payment.ProviderOptions{})
			srv := httptest.NewServer(p.Handler())
			t.Cleanup(srv.Close)
			c, err := payment.NewClient(srv.URL, payment.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			store := &inDoubtStore{Store: memory.New(), committed: committed}
			store.down.Store(2)
			svc := reservation.NewService(store, reservation.Options{Payments: c,
				Lockers: map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: &fakeLocker{fence: 3}}, DefaultLock: reservation.LockRedis})
			sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 2})
			if err != nil {
				t.Fatal(err)
			}
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

// answerAfterLoss is a provider whose charge completes only when answer is
// closed, or fails when its request is cancelled; it records refunds.
type answerAfterLoss struct {
	started chan struct{} // closed when the charge has begun
	answer  chan struct{}
	mu      sync.Mutex
	refunds []string
}

func (p *answerAfterLoss) Charge(ctx context.Context, _ reservation.Charge) (string, error) {
	close(p.started)
	select {
	case <-p.answer:
		return "ch-1", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (p *answerAfterLoss) Refund(_ context.Context, chargeID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refunds = append(p.refunds, chargeID)
	return nil
}

// A holder paused past its lease wakes up with the provider's answer
// already in its socket and its lock already lost. The answer must still
// be read, so that the charge, which went through, is refunded: a charge
// cancelled the instant the loss is seen drops its id.
func TestPaymentAnsweredAfterTheLockWasLost(t *testing.T) {
	p := &answerAfterLoss{started: make(chan struct{}), answer: make(chan struct{})}
	l := &fakeLocker{lost: make(chan struct{})}
	svc, sc := newService(t, l, reservation.Options{Payments: p})
	errc := make(chan error, 1)
	go func() {
		_, err := book(svc, sc.ID, "ann", "A1")
		errc <- err
	}()
	<-p.started
	close(l.lost)
	time.Sleep(10 * time.Millisecond) // the answer is read just after the loss
	close(p.answer)
	if err := <-errc; !errors.Is(err, reservation.ErrLockLost) {
		t.Fatalf("Book: %v, want ErrLockLost", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.refunds) != 1 || p.refunds[0] != "ch-1" {
		t.Errorf("refunds %v, want the charge that went through (ch-1) refunded", p.refunds)
	}
	seatFree(t, svc, sc.ID, "A1")
}
