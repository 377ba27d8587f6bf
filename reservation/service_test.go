package reservation_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
)

// fakeLocker is a SeatLocker whose behaviour a test scripts: it records
// what was locked, can refuse, block, or hand out a lease the test can make
// lost.
type fakeLocker struct {
	mu      sync.Mutex
	locked  [][]string // every successful LockSeats call, in order
	err     error      // returned by LockSeats when set
	block   bool       // wait for ctx to end instead of locking
	lost    chan struct{}
	fence   int64
	release int
	raised  []map[string]int64 // every RaiseFences call, in order
}

func (f *fakeLocker) LockSeats(ctx context.Context, _ string, seats []string) (reservation.SeatLease, error) {
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locked = append(f.locked, append([]string(nil), seats...))
	return fakeLease{f: f}, nil
}

type fakeLease struct{ f *fakeLocker }

func (l fakeLease) Fence(string) int64    { return l.f.fence }
func (l fakeLease) Lost() <-chan struct{} { return l.f.lost }
func (l fakeLease) Tx() reservation.Tx    { return nil }
func (l fakeLease) RaiseFences(_ context.Context, seen map[string]int64) error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.raised = append(l.f.raised, seen)
	return nil
}
func (l fakeLease) Release(context.Context) error {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.f.release++
	return nil
}

func newService(t *testing.T, l *fakeLocker, opts reservation.Options) (*reservation.Service, reservation.Screening) {
	t.Helper()
	opts.Lockers = map[reservation.Strategy]reservation.SeatLocker{reservation.LockRedis: l}
	opts.DefaultLock = reservation.LockRedis
	svc := reservation.NewService(memory.New(), opts)
	sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{Movie: "Metropolis", Rows: 3, SeatsPerRow: 5})
	if err != nil {
		t.Fatalf("create screening: %v", err)
	}
	return svc, sc
}

func TestBookSortsSeatsAndLocksThemInOrder(t *testing.T) {
	l := &fakeLocker{fence: 7}
	svc, sc := newService(t, l, reservation.Options{})
	conf, err := svc.Book(context.Background(), reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"C2", "A5", "A1", "B1"}, Customer: "alice"})
	if err != nil {
		t.Fatalf("Book: %v", err)
	}
	want := []string{"A1", "A5", "B1", "C2"}
	if got := l.locked[0]; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("locked %v, want %v", got, want)
	}
	if strings.Join(conf.Booking.Seats, ",") != strings.Join(want, ",") {
		t.Errorf("booking seats %v, want %v", conf.Booking.Seats, want)
	}
	if conf.Token == "" || l.release != 1 {
		t.Errorf("token %q, releases %d; want a token and one release", conf.Token, l.release)
	}
}

func TestBookRejectsBadRequests(t *testing.T) {
	l := &fakeLocker{}
	svc, sc := newService(t, l, reservation.Options{})
	tests := []struct {
		name  string
		req   reservation.BookRequest
		want  error
		issue string
	}{
		{"no seats", reservation.BookRequest{Seats: nil, Customer: "a"}, reservation.ErrInvalid, "seats"},
		{"eleven seats", reservation.BookRequest{Seats: []string{"A1", "A2", "A3", "A4", "A5", "B1", "B2", "B3", "B4", "B5", "C1"}, Customer: "a"}, reservation.ErrInvalid, "seats"},
		{"repeated seat", reservation.BookRequest{Seats: []string{"A1", "A1"}, Customer: "a"}, reservation.ErrInvalid, "twice"},
		{"seat outside layout", reservation.BookRequest{Seats: []string{"D1"}, Customer: "a"}, reservation.ErrInvalid, "not in screening"},
		{"seat number too high", reservation.BookRequest{Seats: []string{"A6"}, Customer: "a"}, reservation.ErrInvalid, "not in screening"},
		{"lower-case row", reservation.BookRequest{Seats: []string{"a1"}, Customer: "a"}, reservation.ErrInvalid, "row"},
		{"leading zero", reservation.BookRequest{Seats: []string{"A01"}, Customer: "a"}, reservation.ErrInvalid, "leading zeros"},
		{"empty customer", reservation.BookRequest{Seats: []string{"A1"}, Customer: ""}, reservation.ErrInvalid, "customer"},
		{"blank customer", reservation.BookRequest{Seats: []string{"A1"}, Customer: "   "}, reservation.ErrInvalid, "customer"},
		{"control character", reservation.BookRequest{Seats: []string{"A1"}, Customer: "bob\x00"}, reservation.ErrInvalid, "customer"},
		{"overlong customer", reservation.BookRequest{Seats: []string{"A1"}, Customer: strings.Repeat("x", 65)}, reservation.ErrInvalid, "customer"},
		{"invalid UTF-8", reservation.BookRequest{Seats: []string{"A1"}, Customer: "\xff"}, reservation.ErrInvalid, "customer"},
		{"unknown screening", reservation.BookRequest{ScreeningID: "nope", Seats: []string{"A1"}, Customer: "a"}, reservation.ErrNotFound, ""},
		{"screening id with path tricks", reservation.BookRequest{ScreeningID: "../x", Seats: []string{"A1"}, Customer: "a"}, reservation.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.ScreeningID == "" {
				tt.req.ScreeningID = sc.ID
			}
			_, err := svc.Book(context.Background(), tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Book: %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.issue) {
				t.Errorf("message %q does not mention %q", err, tt.issue)
			}
		})
	}
	if len(l.locked) != 0 {
		t.Errorf("bad requests took locks: %v", l.locked)
	}
	_, seats, err := svc.Seats(context.Background(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range seats {
		if s.Status != reservation.SeatFree {
			t.Errorf("seat %s is %s after only bad requests", s.ID, s.Status)
		}
	}
}

func TestBookTakenSeatListsThem(t *testing.T) {
	svc, sc := newService(t, &fakeLocker{}, reservation.Options{})
	ctx := context.Background()
	if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B2"}, Customer: "alice"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"B3", "B2", "B1"}, Customer: "bob"})
	var taken *reservation.SeatsTakenError
	if !errors.As(err, &taken) || !errors.Is(err, reservation.ErrSeatTaken) {
		t.Fatalf("Book: %v, want *SeatsTakenError", err)
	}
	if strings.Join(taken.Seats, ",") != "B2" {
		t.Errorf("taken seats %v, want [B2]", taken.Seats)
	}
	_, seats, _ := svc.Seats(ctx, sc.ID)
	for _, s := range seats {
		if (s.Status == reservation.SeatBooked) != (s.ID == "B2") {
			t.Errorf("seat %s is %s: the failed booking left seats behind", s.ID, s.Status)
		}
	}
}

func TestBookSeatBusyWhenLockWaitRunsOut(t *testing.T) {
	svc, sc := newService(t, &fakeLocker{block: true}, reservation.Options{LockWait: 20 * time.Millisecond})
	_, err := svc.Book(context.Background(), reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "a"})
	if !errors.Is(err, reservation.ErrSeatBusy) {
		t.Fatalf("Book: %v, want ErrSeatBusy", err)
	}
}

func TestBookUnavailableLockBackendBooksNothing(t *testing.T) {
	down := errors.Join(reservation.ErrUnavailable, errors.New("dial tcp: connection refused"))
	svc, sc := newService(t, &fakeLocker{err: down}, reservation.Options{})
	_, err := svc.Book(context.Background(), reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "a"})
	if !errors.Is(err, reservation.ErrUnavailable) {
		t.Fatalf("Book: %v, want ErrUnavailable", err)
	}
	_, seats, _ := svc.Seats(context.Background(), sc.ID)
	if seats[0].Status != reservation.SeatFree {
		t.Errorf("seat A1 is %s after an outage", seats[0].Status)
	}
}

func TestBookAbortsWhenLockIsLostDuringPayment(t *testing.T) {
	l := &fakeLocker{lost: make(chan struct{})}
	svc, _ := newService(t, l, reservation.Options{})
	ctx := context.Background()
	if _, err := svc.CreateScreening(ctx, reservation.NewScreening{ID: "slow", Movie: "M", Rows: 1, SeatsPerRow: 1, PaymentDelay: ptr(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		close(l.lost)
	}()
	_, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: "slow", Seats: []string{"A1"}, Customer: "a"})
	if !errors.Is(err, reservation.ErrLockLost) {
		t.Fatalf("Book: %v, want ErrLockLost", err)
	}
	_, seats, _ := svc.Seats(ctx, "slow")
	if seats[0].Status != reservation.SeatFree {
		t.Errorf("a booking that lost its lock wrote seat A1")
	}
}

func TestBookStaleFenceIsLockLost(t *testing.T) {
	l := &fakeLocker{fence: 10}
	svc, sc := newService(t, l, reservation.Options{})
	ctx := context.Background()
	first, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "new holder"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Cancel(ctx, first.Booking.ID, first.Token); err != nil {
		t.Fatal(err)
	}
	l.fence = 9 // a holder from before, whose lease ran out, or a lock service that lost its counters
	_, err = svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "stale holder"})
	if !errors.Is(err, reservation.ErrLockLost) {
		t.Fatalf("Book with an older fencing token: %v, want ErrLockLost", err)
	}
	if msg := reservation.Message(err); !strings.Contains(msg, "raised") {
		t.Errorf("the refusal says %q: want it to say the counters are raised, so a retry gets newer tokens", msg)
	}
	// The lease is told what the seat has seen, so that its lock service
	// issues a newer token to the next attempt.
	if want := []map[string]int64{{"A1": 10}}; !reflect.DeepEqual(l.raised, want) {
		t.Errorf("RaiseFences calls %v, want %v", l.raised, want)
	}
}

func TestIdempotencyKey(t *testing.T) {
	l := &fakeLocker{}
	svc, sc := newService(t, l, reservation.Options{})
	ctx := context.Background()
	req := reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A2", "A1"}, Customer: "alice", IdempotencyKey: "k-1"}
	first, err := svc.Book(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("same request replays the first answer", func(t *testing.T) {
		again := req
		again.Seats = []string{"A1", "A2"} // same booking, other order
		second, err := svc.Book(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		if second.Booking.ID != first.Booking.ID || second.Token != first.Token {
			t.Errorf("replay gave booking %s token %q, want %s %q", second.Booking.ID, second.Token, first.Booking.ID, first.Token)
		}
		if len(l.locked) != 1 {
			t.Errorf("replay took locks: %v", l.locked)
		}
	})
	t.Run("other request with the key is a mismatch", func(t *testing.T) {
		other := req
		other.Customer = "mallory"
		if _, err := svc.Book(ctx, other); !errors.Is(err, reservation.ErrIdempotencyMismatch) {
			t.Fatalf("Book: %v, want ErrIdempotencyMismatch", err)
		}
	})
	t.Run("concurrent same key books once", func(t *testing.T) {
		req := reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"C5"}, Customer: "carol", IdempotencyKey: "k-2"}
		var wg sync.WaitGroup
		confs := make([]reservation.Confirmation, 8)
		errs := make([]error, 8)
		for i := range confs {
			wg.Go(func() { confs[i], errs[i] = svc.Book(ctx, req) })
		}
		wg.Wait()
		for i := range confs {
			if errs[i] != nil {
				t.Fatalf("request %d: %v", i, errs[i])
			}
			if confs[i].Booking.ID != confs[0].Booking.ID || confs[i].Token != confs[0].Token {
				t.Errorf("request %d got booking %s, request 0 got %s", i, confs[i].Booking.ID, confs[0].Booking.ID)
			}
		}
	})
}

func TestCancelNeedsTheToken(t *testing.T) {
	svc, sc := newService(t, &fakeLocker{}, reservation.Options{})
	ctx := context.Background()
	conf, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, ""); !errors.Is(err, reservation.ErrUnauthorized) {
		t.Errorf("no token: %v, want ErrUnauthorized", err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, strings.Repeat("0", 64)); !errors.Is(err, reservation.ErrForbidden) {
		t.Errorf("wrong token: %v, want ErrForbidden", err)
	}
	if err := svc.Cancel(ctx, "not-a-uuid", conf.Token); !errors.Is(err, reservation.ErrNotFound) {
		t.Errorf("bad id: %v, want ErrNotFound", err)
	}
	if err := svc.Cancel(ctx, conf.Booking.ID, conf.Token); err != nil {
		t.Fatalf("right token: %v", err)
	}
	b, err := svc.Booking(ctx, conf.Booking.ID)
	if err != nil || b.Status != reservation.BookingCancelled {
		t.Errorf("after cancel: %+v, %v; want cancelled", b, err)
	}
	if _, err := svc.Book(ctx, reservation.BookRequest{ScreeningID: sc.ID, Seats: []string{"A1"}, Customer: "bob"}); err != nil {
		t.Errorf("seat not free again after cancel: %v", err)
	}
}

func TestUnsafeChoicesNeedDemoMode(t *testing.T) {
	ctx := context.Background()
	for _, demo := range []bool{false, true} {
		svc, _ := newService(t, &fakeLocker{}, reservation.Options{Demo: demo})
		for _, req := range []reservation.NewScreening{
			{Movie: "M", Rows: 1, SeatsPerRow: 1, Lock: reservation.LockNone},
			{Movie: "M", Rows: 1, SeatsPerRow: 1, Guard: reservation.GuardOff},
		} {
			_, err := svc.CreateScreening(ctx, req)
			if demo && err != nil {
				t.Errorf("demo mode, lock %q guard %q: %v", req.Lock, req.Guard, err)
			}
			if !demo && !errors.Is(err, reservation.ErrInvalid) {
				t.Errorf("no demo mode, lock %q guard %q: %v, want ErrInvalid", req.Lock, req.Guard, err)
			}
		}
	}
}

func TestCreateScreeningValidates(t *testing.T) {
	svc, _ := newService(t, &fakeLocker{}, reservation.Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		req  reservation.NewScreening
		want error
	}{
		{"no movie", reservation.NewScreening{Rows: 1, SeatsPerRow: 1}, reservation.ErrInvalid},
		{"zero rows", reservation.NewScreening{Movie: "M", Rows: 0, SeatsPerRow: 1}, reservation.ErrInvalid},
		{"27 rows", reservation.NewScreening{Movie: "M", Rows: 27, SeatsPerRow: 1}, reservation.ErrInvalid},
		{"101 seats per row", reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 101}, reservation.ErrInvalid},
		{"unknown lock", reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, Lock: "zookeeper"}, reservation.ErrInvalid},
		{"unknown guard", reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, Guard: "maybe"}, reservation.ErrInvalid},
		{"negative delay", reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 1, PaymentDelay: ptr(-time.Second)}, reservation.ErrInvalid},
		{"bad id", reservation.NewScreening{ID: "a/b", Movie: "M", Rows: 1, SeatsPerRow: 1}, reservation.ErrInvalid},
		{"ok", reservation.NewScreening{ID: "ok", Movie: "M", Rows: 26, SeatsPerRow: 100}, nil},
		{"duplicate id", reservation.NewScreening{ID: "ok", Movie: "M", Rows: 1, SeatsPerRow: 1}, reservation.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.CreateScreening(ctx, tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CreateScreening: %v, want %v", err, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Without a payment, nothing happens between a check and the write, so a
// booking leaves the check to the guarded write (one round trip to the
// store) and still answers seat_taken before seat_held, naming the seats.
// With a payment it checks first, so that nobody pays for seats that are
// gone.
func TestBookChecksSeatsOnlyWhenItPays(t *testing.T) {
	ctx := context.Background()
	svc, store := newCountingService()
	free, err := svc.CreateScreening(ctx, reservation.NewScreening{Movie: "Metropolis", Rows: 3, SeatsPerRow: 5})
	if err != nil {
		t.Fatal(err)
	}
	delay := time.Millisecond
	paid, err := svc.CreateScreening(ctx, reservation.NewScreening{Movie: "Nosferatu", Rows: 3, SeatsPerRow: 5, PaymentDelay: &delay})
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []reservation.Screening{free, paid} {
		if _, err := book(svc, sc.ID, "alice", "A2"); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.HoldSeats(ctx, reservation.HoldRequest{ScreeningID: sc.ID, Seats: []string{"B1"}, Customer: "carol"}); err != nil {
			t.Fatal(err)
		}
	}
	store.checks.Store(0)

	_, err = book(svc, free.ID, "bob", "B1", "A1", "A2")
	var taken *reservation.SeatsTakenError
	if !errors.As(err, &taken) || strings.Join(taken.Seats, ",") != "A2" {
		t.Errorf("booking A2 (taken) and B1 (held): %v, want seat_taken naming A2", err)
	}
	_, err = book(svc, free.ID, "bob", "B1", "B2")
	var held *reservation.SeatsHeldError
	if !errors.As(err, &held) || strings.Join(held.Seats, ",") != "B1" {
		t.Errorf("booking B1 (held): %v, want seat_held naming B1", err)
	}
	if n := store.checks.Load(); n != 0 {
		t.Errorf("bookings without a payment read the seats %d times before writing, want 0", n)
	}

	if _, err = book(svc, paid.ID, "bob", "A2"); !errors.Is(err, reservation.ErrSeatTaken) {
		t.Errorf("booking taken A2 of a paid screening: %v, want seat_taken", err)
	}
	if n := store.checks.Load(); n != 1 {
		t.Errorf("a booking with a payment read the seats %d times before paying, want 1", n)
	}
	seatFree(t, svc, free.ID, "A1")
	seatFree(t, svc, free.ID, "B2")
}

// A blind write (guard=off) refuses nothing, so a booking without a
// payment must still check its seats: a seat booked before is refused, not
// booked again. Only a race gets past the check.
func TestBookChecksSeatsUnderGuardOff(t *testing.T) {
	svc, _ := newService(t, &fakeLocker{}, reservation.Options{Demo: true})
	sc, err := svc.CreateScreening(context.Background(), reservation.NewScreening{Movie: "M", Rows: 1, SeatsPerRow: 2, Guard: reservation.GuardOff})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := book(svc, sc.ID, "alice", "A1"); err != nil {
		t.Fatal(err)
	}
	if _, err := book(svc, sc.ID, "bob", "A1"); !errors.Is(err, reservation.ErrSeatTaken) {
		t.Errorf("booking A1 again under guard=off, no payment: %v, want seat_taken", err)
	}
}
