package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// The tests in this file check group commit (see committer in
// groupcommit.go): bookings that share one transaction keep their own
// outcome, get their answer only from the COMMIT, and survive their
// neighbours' callers giving up; two batches do not deadlock.

// seatsWrite is a booking of seats on sc, each with fence (0: unfenced).
func seatsWrite(sc reservation.Screening, fence int64, seats ...string) reservation.Write {
	w := faultWrite(sc, seats[0])
	w.Booking.Seats = seats
	w.Fences = make(map[string]int64)
	for _, seat := range seats {
		w.Fences[seat] = fence
	}
	return w
}

// assertBooked checks that each seat is booked by the booking of w, or
// free when w is nil, and that w's booking exists.
func assertBooked(t *testing.T, store *postgres.GroupCommit, sc reservation.Screening, want map[string]*reservation.Write) {
	t.Helper()
	booked, err := store.BookedSeats(t.Context(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for seat, w := range want {
		switch {
		case w == nil && booked[seat] != "":
			t.Errorf("seat %s booked by %s, want it free", seat, booked[seat])
		case w != nil && booked[seat] != w.Booking.ID:
			t.Errorf("seat %s booked by %q, want %s", seat, booked[seat], w.Booking.ID)
		}
	}
}

// slowCommit installs a deferred trigger on bookings that runs at COMMIT:
// it refuses a booking whose customer is "refused" and sleeps for sleep
// on one whose customer is "slow".
func slowCommit(t *testing.T, dbURL string, sleep time.Duration) {
	t.Helper()
	_, err := admin(t, dbURL).Exec(t.Context(), `
CREATE FUNCTION at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.customer = 'refused' THEN
    RAISE EXCEPTION 'refused at commit' USING ERRCODE = '23514';
  END IF;
  IF NEW.customer = 'slow' THEN
    PERFORM pg_sleep(`+strconv.FormatFloat(sleep.Seconds(), 'f', -1, 64)+`);
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON bookings
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION at_commit()`)
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchMixedOutcomes sends one batch in which most bookings are
// refused, each for its own reason: each gets its own error, as if it had
// been alone, writes nothing, and does not stop the others from being
// written.
func TestBatchMixedOutcomes(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := openGrouped(t, dbURL)
	sc := faultScreening(t, store, reservation.LockRedis)
	ctx := t.Context()

	first := seatsWrite(sc, 1, "A1")
	stale := seatsWrite(sc, 10, "A2")
	for _, w := range []reservation.Write{first, stale} {
		if err := store.Book(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Cancel(ctx, stale.Booking.ID); err != nil { // A2 free, fence 10
		t.Fatal(err)
	}

	ok1 := seatsWrite(sc, 2, "A4")
	taken := seatsWrite(sc, 2, "A8", "A1") // A8 free: must stay so
	staleAgain := seatsWrite(sc, 5, "A2")
	unknown := seatsWrite(reservation.Screening{ID: "no-such-screening"}, 2, "A5")
	sameID := seatsWrite(sc, 2, "A7")
	sameID.Booking.ID = first.Booking.ID
	ok2 := seatsWrite(sc, 2, "A5", "A6")
	ws := []reservation.Write{ok1, taken, staleAgain, unknown, sameID, ok2}
	errs := postgres.WriteBatch(ctx, store, ws)

	var takenErr *reservation.SeatsTakenError
	if !errors.As(errs[1], &takenErr) || len(takenErr.Seats) != 1 || takenErr.Seats[0] != "A1" {
		t.Errorf("booking of a taken seat: %v, want seats taken: A1", errs[1])
	}
	for i, want := range map[int]error{2: reservation.ErrStaleToken, 3: reservation.ErrNotFound, 4: reservation.ErrConflict} {
		if !errors.Is(errs[i], want) {
			t.Errorf("booking %d: %v, want %v", i, errs[i], want)
		}
	}
	for _, i := range []int{0, 5} {
		if errs[i] != nil {
			t.Errorf("booking %d of free seats: %v", i, errs[i])
		}
	}
	assertBooked(t, store, sc, map[string]*reservation.Write{
		"A1": &first, "A2": nil, "A4": &ok1, "A5": &ok2, "A6": &ok2, "A7": nil, "A8": nil,
	})
	for _, w := range []reservation.Write{taken, staleAgain} {
		if _, _, err := store.Booking(ctx, w.Booking.ID); !errors.Is(err, reservation.ErrNotFound) {
			t.Errorf("refused booking %s: %v, want ErrNotFound", w.Booking.ID, err)
		}
	}
}

// TestBatchCommitFails fails a batch's COMMIT: refused by the server,
// every booking of the batch fails and nothing is written; unanswered,
// every booking is in doubt.
func TestBatchCommitFails(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := openGrouped(t, dbURL)
	sc := faultScreening(t, store, reservation.LockRedis)
	slowCommit(t, dbURL, 2*time.Second)

	t.Run("refused", func(t *testing.T) {
		refused := seatsWrite(sc, 0, "A1")
		refused.Booking.Customer = "refused"
		ws := []reservation.Write{seatsWrite(sc, 0, "A2"), refused, seatsWrite(sc, 0, "A3")}
		for i, err := range postgres.WriteBatch(t.Context(), store, ws) {
			if err == nil || errors.Is(err, reservation.ErrWriteInDoubt) {
				t.Errorf("booking %d of a batch whose COMMIT was refused: %v, want an error not in doubt", i, err)
			}
		}
		for _, w := range ws {
			assertNothingWritten(t, dbURL, w)
		}
	})

	t.Run("unanswered", func(t *testing.T) {
		slow := seatsWrite(sc, 0, "B1")
		slow.Booking.Customer = "slow"
		ws := []reservation.Write{seatsWrite(sc, 0, "B2"), slow}
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		for i, err := range postgres.WriteBatch(ctx, store, ws) {
			if !errors.Is(err, reservation.ErrWriteInDoubt) || !errors.Is(err, reservation.ErrUnavailable) {
				t.Errorf("booking %d of a batch whose COMMIT was not answered: %v, want ErrWriteInDoubt", i, err)
			}
		}
	})
}

// TestBatchCallerGivesUp cancels one caller while its booking is on the
// wire in a batch with another's: the other's booking is written all the
// same, and the caller that gave up waits for the batch and is told what
// happened (its booking committed), neither that it failed nor that it is
// in doubt: in doubt, the service would look the booking up before the
// batch committed, and refund a charge for a booking that then commits.
func TestBatchCallerGivesUp(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := openGrouped(t, dbURL)
	sc := faultScreening(t, store, reservation.LockRedis)
	slowCommit(t, dbURL, time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	waitFor := func(what string, cond func(queued, inFlight int) bool) {
		t.Helper()
		waitQueued(t, store, 30*time.Second, what, cond)
	}

	// A slow booking alone on the wire, so that the next two queue and go
	// out together.
	var first []reservation.Write
	var wg sync.WaitGroup
	w := seatsWrite(sc, 0, "B0")
	w.Booking.Customer = "slow"
	first = append(first, w)
	wg.Go(func() {
		if err := store.Book(ctx, w); err != nil {
			t.Errorf("first booking: %v", err)
		}
	})
	waitFor("a first booking on the wire", func(q, inFlight int) bool { return q == 0 && inFlight == 1 })

	givesUp := seatsWrite(sc, 0, "A2")
	givesUp.Booking.Customer = "slow" // keeps the batch on the wire for a second
	other := seatsWrite(sc, 0, "A3")
	callerCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	var givesUpErr, otherErr error
	wg.Go(func() { givesUpErr = store.Book(callerCtx, givesUp) })
	wg.Go(func() { otherErr = store.Book(ctx, other) })
	waitFor("both bookings queued", func(q, _ int) bool { return q == 2 })
	waitFor("their batch on the wire", func(q, _ int) bool { return q == 0 })
	giveUp()
	wg.Wait()

	if givesUpErr != nil {
		t.Errorf("caller that gave up while its booking was on the wire: %v, want the batch's answer (written)", givesUpErr)
	}
	if otherErr != nil {
		t.Errorf("booking sharing the batch: %v, want it written", otherErr)
	}
	// The batch commits after the first caller has gone.
	waitFor("the batch answered", func(_, inFlight int) bool { return inFlight == 0 })
	assertBooked(t, store, sc, map[string]*reservation.Write{"B0": &first[0], "A2": &givesUp, "A3": &other})
}

// waitQueued waits, for limit at most, until cond holds of how many
// bookings wait for store's next batch and how many batches are on the
// wire; it fails the test if cond never holds.
func waitQueued(t *testing.T, store *postgres.GroupCommit, limit time.Duration, what string, cond func(queued, inFlight int) bool) {
	t.Helper()
	for end := time.Now().Add(limit); !cond(postgres.Queued(store)); {
		if time.Now().After(end) {
			queued, inFlight := postgres.Queued(store)
			t.Fatalf("waited %v for %s: %d bookings queued, %d batches on the wire", limit, what, queued, inFlight)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSecondBatch checks when a second batch goes on the wire while a
// first is there: bookings that come meanwhile wait for the first and
// share the next batch, until secondBatchAt of them wait; then they go
// out at once, beside the first, without waiting for it. And once two
// batches are on the wire, the first answered does not send the few that
// queued since while the other is still there: they wait for the next.
func TestSecondBatch(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	store := openGrouped(t, dbURL)
	sc := faultScreening(t, store, reservation.LockRedis)
	const commitTakes = 3 * time.Second
	slowCommit(t, dbURL, commitTakes)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	want := make(map[string]*reservation.Write)
	book := func(customer, seat string) {
		w := seatsWrite(sc, 0, seat)
		w.Booking.Customer = customer // "slow": on the wire for commitTakes
		want[seat] = &w
		wg.Go(func() {
			if err := store.Book(ctx, w); err != nil {
				t.Errorf("booking of %s: %v", seat, err)
			}
		})
	}
	// queued checks, after a while for a wrong batch to go out, that
	// bookings wait behind the one batch on the wire.
	queued := func(what string, want int) {
		t.Helper()
		waitQueued(t, store, commitTakes/6, what, func(q, inFlight int) bool { return q == want || inFlight > 1 })
		time.Sleep(50 * time.Millisecond)
		if q, inFlight := postgres.Queued(store); q != want || inFlight != 1 {
			t.Fatalf("%s: %d queued, %d batches on the wire; want %d queued behind one batch", what, q, inFlight, want)
		}
	}

	book("slow", "S1")
	firstSent := time.Now()
	waitQueued(t, store, commitTakes/6, "the slow booking on the wire", func(q, inFlight int) bool { return q == 0 && inFlight == 1 })
	few := postgres.SecondBatchAt - 1
	for i := range few {
		book("test", fmt.Sprintf("A%d", i+1))
	}
	queued("fewer than SecondBatchAt bookings behind a batch", few)

	time.Sleep(commitTakes / 3) // the second batch is answered well after the first
	book("slow", "B1")
	waitQueued(t, store, commitTakes/6, "a second batch beside the first", func(q, inFlight int) bool { return q == 0 && inFlight == 2 })
	if waited := time.Since(firstSent); waited >= commitTakes {
		t.Fatalf("the second batch went out after %v, once the first was answered: want it beside the first", waited)
	}

	book("test", "C1")
	book("test", "C2")
	waitQueued(t, store, commitTakes/6, "two bookings queued behind two batches", func(q, _ int) bool { return q == 2 })
	waitQueued(t, store, commitTakes, "the first batch answered", func(_, inFlight int) bool { return inFlight == 1 })
	time.Sleep(50 * time.Millisecond) // time for a wrong batch to be answered
	if q, inFlight := postgres.Queued(store); q != 2 || inFlight != 1 {
		t.Fatalf("first batch answered while the second is on the wire: %d queued, %d batches on the wire; want the 2 queued behind the second", q, inFlight)
	}
	wg.Wait()
	assertBooked(t, store, sc, want)
}

// blockedBatches runs batch[0] on store[0] and batch[1] on store[1] (two
// instances) at once, each through run, while the test holds locks taken
// by the statement hold (with args) in a transaction of its own; once both
// batches wait for a lock, it lets go, and returns each batch's errors.
func blockedBatches(t *testing.T, dbURL string, stores [2]*postgres.GroupCommit, batches [2][]reservation.Write,
	run func(ctx context.Context, store *postgres.GroupCommit, ws []reservation.Write) []error,
	hold string, args ...any) [2][]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn := admin(t, dbURL)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if tag, err := tx.Exec(ctx, hold, args...); err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("holding locks: %v (%d rows)", err, tag.RowsAffected())
	}

	var errs [2][]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { errs[i] = run(ctx, stores[i], batches[i]) })
	}
	watcher := admin(t, dbURL)
	for waiting := 0; waiting < 2; {
		if ctx.Err() != nil {
			t.Fatal("the batches never both waited for a lock")
		}
		time.Sleep(5 * time.Millisecond)
		err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return errs
}

// TestBatchesDoNotDeadlock runs two batches, from two instances, that
// write the same two seats in opposite orders, each held up between them
// (by a seat row the test keeps locked) until the other has started:
// written booking by booking, each would hold one seat and wait for the
// other's (a deadlock, one batch's booking aborted after
// deadlock_timeout). The batches lock their seats in one order first, so
// one waits for the other and its bookings of those seats find them taken.
func TestBatchesDoNotDeadlock(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	stores := [2]*postgres.GroupCommit{openGrouped(t, dbURL), openGrouped(t, dbURL)}
	sc := faultScreening(t, stores[0], reservation.LockRedis)
	// Seat rows for the test to lock: booked once and cancelled.
	for _, seat := range []string{"A3", "A4"} {
		w := seatsWrite(sc, 0, seat)
		if err := stores[0].Book(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		if err := stores[0].Cancel(t.Context(), w.Booking.ID); err != nil {
			t.Fatal(err)
		}
	}

	batches := [2][]reservation.Write{
		{seatsWrite(sc, 0, "A1"), seatsWrite(sc, 0, "A3"), seatsWrite(sc, 0, "A2")},
		{seatsWrite(sc, 0, "A2"), seatsWrite(sc, 0, "A4"), seatsWrite(sc, 0, "A1")},
	}
	errs := blockedBatches(t, dbURL, stores, batches, postgres.WriteBatch,
		`SELECT FROM seats WHERE screening_id = $1 AND seat IN ('A3', 'A4') FOR UPDATE`, sc.ID)

	// Which batch went first is up to the scheduler; the other lost the
	// seats they share, and got its own.
	won := 0
	if errs[0][0] != nil {
		won = 1
	}
	lost := 1 - won
	for i, err := range errs[won] {
		if err != nil {
			t.Errorf("batch %d (first), booking %d: %v", won, i, err)
		}
	}
	for i, err := range errs[lost] {
		var taken *reservation.SeatsTakenError
		if wantTaken := i != 1; wantTaken != errors.As(err, &taken) || (!wantTaken && err != nil) {
			t.Errorf("batch %d (second), booking %d: %v, want taken: %v", lost, i, err, wantTaken)
		}
	}
	a1, a2 := &batches[won][0], &batches[won][2] // batch 0 writes A1 first, batch 1 A2
	if won == 1 {
		a1, a2 = a2, a1
	}
	assertBooked(t, stores[0], sc, map[string]*reservation.Write{
		"A1": a1, "A2": a2, "A3": &batches[0][1], "A4": &batches[1][1],
	})
}

// TestBatchDeadlockVictimIsRetried makes two batches wait for each other
// where the seat order cannot help: each inserts a booking with an
// idempotency key that the other's later booking also uses. Postgres
// aborts one of the waiting bookings (its subtransaction: the rest of its
// batch goes on); sent again, it finds the key taken, as it would have
// had it come second.
func TestBatchDeadlockVictimIsRetried(t *testing.T) {
	dbURL := testenv.NewDatabase(t)
	stores := [2]*postgres.GroupCommit{openGrouped(t, dbURL), openGrouped(t, dbURL)}
	sc := faultScreening(t, stores[0], reservation.LockRedis)
	keyed := func(seat, key string) reservation.Write {
		w := seatsWrite(sc, 0, seat)
		w.Idempotency = &reservation.IdempotencyRecord{KeyHash: []byte(key), RequestHash: []byte(seat),
			SealedToken: []byte("s"), CreatedAt: time.Now()}
		return w
	}
	// Each batch is held up after its first booking by its middle one,
	// whose booking id the test has inserted and not committed: the lock
	// on a seat row cannot do it, since a batch takes those first.
	middle := [2]reservation.Write{seatsWrite(sc, 0, "A5"), seatsWrite(sc, 0, "A6")}
	batches := [2][]reservation.Write{
		{keyed("A1", "k1"), middle[0], keyed("A3", "k2")},
		{keyed("A2", "k2"), middle[1], keyed("A4", "k1")},
	}
	errs := blockedBatches(t, dbURL, stores, batches, postgres.BookTogether, `
		INSERT INTO bookings (id, screening_id, customer, seats, status, token_hash, created_at)
		VALUES ($1, $3, 'test', '{}', 'confirmed', '', now()), ($2, $3, 'test', '{}', 'confirmed', '', now())`,
		middle[0].Booking.ID, middle[1].Booking.ID, sc.ID)

	// Each key is the first booking's of one batch; the other batch's
	// booking with that key conflicts.
	for b := range 2 {
		for i, err := range errs[b] {
			if i == 2 {
				if !errors.Is(err, reservation.ErrConflict) {
					t.Errorf("batch %d, booking %d with the other batch's key: %v, want ErrConflict", b, i, err)
				}
			} else if err != nil {
				t.Errorf("batch %d, booking %d: %v", b, i, err)
			}
		}
	}
}
