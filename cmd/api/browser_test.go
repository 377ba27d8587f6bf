package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seatlock/seatlock/internal/testenv"
)

// browser returns a chromedp context on a fresh headless chromium, or
// skips the test when there is none. Under REQUIRE_INTEGRATION=1 and
// REQUIRE_BROWSER=1 (as in CI) a missing browser is a failure instead.
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		msg := "no chromium found: install it (apt-get install -y chromium) to run the browser test"
		if os.Getenv("REQUIRE_INTEGRATION") == "1" && os.Getenv("REQUIRE_BROWSER") == "1" {
			t.Fatal(msg)
		}
		testenv.Skip(t, testenv.Need{What: "chromium", Install: "apt-get install -y chromium"}, msg)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 800),
	)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	return ctx
}

// TestSeatMapInBrowser loads the live seat map in a real browser, books a
// seat through the API from outside and watches it turn booked on the page,
// then books one by clicking.
func TestSeatMapInBrowser(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, nil)
	s := createScreening(t, api.url, `{"id":"browser-test","movie":"Headless","rows":3,"seats_per_row":6}`)
	seat := func(id string) string { return `button.seat[data-seat="` + id + `"]` }

	err := chromedp.Do(ctx,
		chromedp.Navigate(api.url+"/?screening="+s.ID),
		chromedp.WaitVisible(seat("C6")),
	)
	if err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Text("#map"))
	for _, id := range []string{"A1", "B4", "C6"} {
		if err != nil || !strings.Contains(text, id) {
			t.Errorf("the page does not show seat %s: %q (%v)", id, text, err)
		}
	}

	t.Run("a booking made elsewhere turns its seat booked", func(t *testing.T) {
		if r := call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("outside", "B2")); r.status != 201 {
			t.Fatalf("booking: %d %s", r.status, r.body)
		}
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := chromedp.Do(wait, chromedp.WaitVisible(seat("B2")+".booked")); err != nil {
			t.Fatalf("B2 not shown booked within 5s: %v", err)
		}
		counts, err := chromedp.Run(ctx, chromedp.Text("#info"))
		if err != nil || !strings.Contains(counts, "booked 1") || !strings.Contains(counts, "free 17") {
			t.Errorf("counts %q (%v), want 17 free and 1 booked", counts, err)
		}
	})

	t.Run("a seat booked by clicking shows the token", func(t *testing.T) {
		err := chromedp.Do(ctx,
			chromedp.Click(seat("A3")),
			chromedp.WaitVisible(seat("A3")+".picked"),
			chromedp.SendKeys("#customer", "clicker"),
			chromedp.Click("#confirm"),
			chromedp.WaitVisible("#token"),
			chromedp.WaitVisible(seat("A3")+".booked"),
		)
		if err != nil {
			t.Fatalf("booking by clicking: %v", err)
		}
		token, err := chromedp.Run(ctx, chromedp.Text("#token"))
		if err != nil || len(token) != 64 {
			t.Errorf("token %q (%v), want 64 hex digits", token, err)
		}
		_, seats := seatsOf(t, api.url, s.ID)
		if seats["A3"].Status != "booked" {
			t.Errorf("A3 is %q on the server, want booked", seats["A3"].Status)
		}
	})

	t.Run("a conflict is shown plainly", func(t *testing.T) {
		// C1 is picked on the page, then booked by someone else before
		// the confirmation; the page is made to send it anyway, as a
		// page whose event has not arrived yet would.
		err := chromedp.Do(ctx,
			chromedp.Click(seat("C1")),
			chromedp.WaitVisible(seat("C1")+".picked"),
			chromedp.Func(func(context.Context, *chromedp.Target) error {
				if r := call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("faster", "C1")); r.status != 201 {
					t.Errorf("booking C1 from outside: %d %s", r.status, r.body)
				}
				return nil
			}),
			chromedp.WaitVisible(seat("C1")+".booked"),
		)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`picked.add("C1"), true`)); err != nil {
			t.Fatal(err)
		}
		err = chromedp.Do(ctx, chromedp.Click("#confirm"), chromedp.WaitVisible("#conflict"))
		if err != nil {
			t.Fatalf("no conflict shown: %v", err)
		}
		msg, err := chromedp.Run(ctx, chromedp.Text("#conflict"))
		if err != nil || !strings.Contains(msg, "seat_taken") || !strings.Contains(msg, "C1") {
			t.Errorf("conflict message %q (%v), want it to name seat_taken and C1", msg, err)
		}
	})
}

// Under guard=off two customers can both be confirmed for one seat: the
// map must show it, live and after a reload, in a colour of its own.
func TestSeatMapShowsDoubleBooking(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, map[string]string{"DEMO_MODE": "true"})
	s := createScreening(t, api.url, `{"id":"browser-race","movie":"Race","rows":2,"seats_per_row":4,"lock":"none","guard":"off","payment_delay_ms":300}`)
	seat := func(id string) string { return `button.seat[data-seat="` + id + `"]` }
	if err := chromedp.Do(ctx, chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible(seat("B4"))); err != nil {
		t.Fatalf("loading the page: %v", err)
	}

	// Both check B2 while it is free, both pay 300 ms, both write blind.
	answers := make(chan response, 2)
	for _, customer := range []string{"ann", "bob"} {
		go func() {
			answers <- call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody(customer, "B2"))
		}()
	}
	for range 2 {
		if r := <-answers; r.status != 201 {
			t.Fatalf("booking B2 under lock=none guard=off: %d %s; want both confirmed", r.status, r.body)
		}
	}
	if _, seats := seatsOf(t, api.url, s.ID); len(seats["B2"].Bookings) != 2 || seats["B2"].Status != "booked" {
		t.Fatalf("seats API: B2 is %+v, want booked with 2 bookings", seats["B2"])
	}

	for _, how := range []string{"live", "after a reload"} {
		if how != "live" {
			if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(seat("B4"))); err != nil {
				t.Fatal(err)
			}
		}
		wait, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := chromedp.Do(wait, chromedp.WaitVisible(seat("B2")+".double"))
		cancel()
		if err != nil {
			t.Fatalf("%s: B2 not shown double-booked within 5s: %v", how, err)
		}
		counts, err := chromedp.Run(ctx, chromedp.Text("#info"))
		if err != nil || !strings.Contains(counts, "double-booked 1") || !strings.Contains(counts, "booked 1") {
			t.Errorf("%s: counts %q (%v), want 1 booked and 1 double-booked", how, counts, err)
		}
	}
}

// The lock timeline: a seat is outlined while a booking request is inside
// its critical section, marked when two are inside at once (lock=none lets
// them), and each section that ended is listed with how long it lasted.
func TestSeatMapShowsCriticalSections(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, map[string]string{"DEMO_MODE": "true"})
	s := createScreening(t, api.url, `{"id":"browser-locks","movie":"Locks","rows":2,"seats_per_row":4,"lock":"none","guard":"fence","payment_delay_ms":1500}`)
	seat := func(id string) string { return `button.seat[data-seat="` + id + `"]` }
	if err := chromedp.Do(ctx, chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible(seat("B4"))); err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	classes := func(id string) string {
		t.Helper()
		c, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+seat(id)+`').className`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// One request alone on A1, two at once on B2: each pays 1.5 s inside
	// its section.
	answers := make(chan response, 3)
	for _, b := range []struct{ customer, seat string }{{"ann", "A1"}, {"bob", "B2"}, {"cat", "B2"}} {
		go func() {
			answers <- call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody(b.customer, b.seat))
		}()
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := chromedp.Do(wait, chromedp.WaitVisible(seat("A1")+".inside"), chromedp.WaitVisible(seat("B2")+".overlap"))
	cancel()
	if err != nil {
		t.Fatalf("A1 not shown inside a critical section and B2 with two holders within 5s: %v", err)
	}
	if c := classes("A1"); strings.Contains(c, "overlap") {
		t.Errorf("A1 has one holder, yet its classes are %q", c)
	}
	now, err := chromedp.Run(ctx, chromedp.Text("#locks"))
	if err != nil || !strings.Contains(now, "A1, B2") || !strings.Contains(now, "two holders at once: B2") {
		t.Errorf("#locks %q (%v), want A1 and B2 inside, B2 twice", now, err)
	}

	statuses := map[int]int{}
	for range 3 {
		statuses[(<-answers).status]++
	}
	if statuses[201] != 2 || statuses[409] != 1 {
		t.Fatalf("answers %v, want A1 and one B2 booked, the other B2 refused by the fenced write", statuses)
	}
	wait, cancel = context.WithTimeout(ctx, 5*time.Second)
	err = chromedp.Do(wait, chromedp.WaitVisible(`#timeline li:nth-child(3)`), chromedp.WaitVisible(seat("B2")+".booked"))
	cancel()
	if err != nil {
		t.Fatalf("three ended sections not listed within 5s: %v", err)
	}
	for _, id := range []string{"A1", "B2"} {
		if c := classes(id); strings.Contains(c, "inside") {
			t.Errorf("%s still shown inside a critical section after every request answered: %q", id, c)
		}
	}
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#timeline li')].map(li => li.className + '|' + li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	overlapped := 0
	for _, l := range lines {
		if !strings.Contains(l, ": held 1.") && !strings.Contains(l, ": held 2.") {
			t.Errorf("timeline line %q, want a section of about 1.5 s", l)
		}
		if strings.HasPrefix(l, "overlap|B2:") {
			overlapped++
		} else if !strings.HasPrefix(l, "|A1:") {
			t.Errorf("timeline line %q, want A1 alone or B2 overlapped", l)
		}
	}
	if overlapped != 2 {
		t.Errorf("timeline %q, want both B2 sections marked as overlapping", lines)
	}
	if now, err := chromedp.Run(ctx, chromedp.Text("#locks")); err != nil || !strings.Contains(now, "No seat") {
		t.Errorf("#locks %q (%v), want no seat inside", now, err)
	}
}

// TestSeatMapHolds shows holds on the page: a hold made elsewhere turns its
// seat held and its release frees it, live; a hold that expires frees its
// seat with no event; and the page holds picked seats, counts down, and
// confirms the hold into a booking.
func TestSeatMapHolds(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, nil)
	s := createScreening(t, api.url, `{"id":"browser-holds","movie":"Holds","rows":2,"seats_per_row":4,"hold_ttl_ms":60000}`)
	short := createScreening(t, api.url, `{"id":"browser-expiry","movie":"Expiry","rows":1,"seats_per_row":2,"hold_ttl_ms":1000}`)
	seat := func(id string) string { return `button.seat[data-seat="` + id + `"]` }
	within := func(d time.Duration, actions ...chromedp.Action[chromedp.Void]) error {
		wait, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return chromedp.Do(wait, actions...)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible(seat("B4"))); err != nil {
		t.Fatalf("loading the page: %v", err)
	}

	t.Run("a hold made elsewhere shows held, and its release frees the seat", func(t *testing.T) {
		h := mustHold(t, api.url, s.ID, "outside", "B2")
		if err := within(5*time.Second, chromedp.WaitVisible(seat("B2")+".held")); err != nil {
			t.Fatalf("B2 not shown held within 5s: %v", err)
		}
		title, err := chromedp.Run(ctx, chromedp.AttributeValue(seat("B2"), "title"))
		if err != nil || !strings.Contains(title.Value, "held until") {
			t.Errorf("B2's title %q (%v), want its expiry", title.Value, err)
		}
		counts, err := chromedp.Run(ctx, chromedp.Text("#info"))
		if err != nil || !strings.Contains(counts, "held 1") || !strings.Contains(counts, "free 7") {
			t.Errorf("counts %q (%v), want 1 held and 7 free", counts, err)
		}
		if r := call(t, "DELETE", api.url+"/v1/holds/"+h.ID, "", "Authorization", "Bearer "+h.Token); r.status != 204 {
			t.Fatalf("release: %d %s", r.status, r.body)
		}
		if err := within(5*time.Second, chromedp.WaitVisible(seat("B2")+`[data-status="free"]`)); err != nil {
			t.Fatalf("B2 not shown free within 5s of its release: %v", err)
		}
	})

	t.Run("the page holds, counts down and confirms", func(t *testing.T) {
		err := within(20*time.Second,
			chromedp.Click(seat("A3")),
			chromedp.WaitVisible(seat("A3")+".picked"),
			chromedp.SendKeys("#customer", "holder"),
			chromedp.Click("#hold"),
			chromedp.WaitVisible("#countdown"),
			chromedp.WaitVisible(seat("A3")+".held"),
		)
		if err != nil {
			t.Fatalf("holding by clicking: %v", err)
		}
		left, err := chromedp.Run(ctx, chromedp.Text("#countdown"))
		if err != nil || !strings.HasSuffix(left, "left") || !strings.HasPrefix(left, "0:") && !strings.HasPrefix(left, "1:") {
			t.Errorf("countdown %q (%v), want about 1:00 left", left, err)
		}
		if _, seats := seatsOf(t, api.url, s.ID); seats["A3"].Status != "held" {
			t.Errorf("A3 is %q on the server, want held", seats["A3"].Status)
		}
		if err := within(10*time.Second, chromedp.Click("#confirm-hold"), chromedp.WaitVisible("#token"), chromedp.WaitVisible(seat("A3")+".booked")); err != nil {
			t.Fatalf("confirming: %v", err)
		}
		if _, seats := seatsOf(t, api.url, s.ID); seats["A3"].Status != "booked" {
			t.Errorf("A3 is %q on the server, want booked", seats["A3"].Status)
		}
	})

	t.Run("an expired hold frees its seat with no event", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(api.url+"/?screening="+short.ID), chromedp.WaitVisible(seat("A2"))); err != nil {
			t.Fatal(err)
		}
		mustHold(t, api.url, short.ID, "walker", "A1")
		if err := within(5*time.Second, chromedp.WaitVisible(seat("A1")+".held")); err != nil {
			t.Fatalf("A1 not shown held: %v", err)
		}
		if err := within(10*time.Second, chromedp.WaitVisible(seat("A1")+`[data-status="free"]`)); err != nil {
			t.Fatalf("A1 not shown free after its hold of 1s expired: %v", err)
		}
	})
}
