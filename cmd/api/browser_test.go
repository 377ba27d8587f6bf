package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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
	// The browser starts with the first action run on a context, and ends
	// with that context: start it here, so that the waits of a test may
	// run on contexts of their own, with their own deadlines.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// within runs actions that wait for something on the page, and fails the
// test naming what did not come within d. chromedp's queries (Click,
// WaitVisible, Text) search a selector as CSS, XPath and plain text alike,
// so an id that is also text of the page ("#hold" in a stylesheet's
// "#holds") finds that text too, which is never visible: the page keeps
// its ids apart.
func within(t *testing.T, ctx context.Context, d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	wait, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := chromedp.Do(wait, actions...); err != nil {
		t.Fatalf("%s: not within %s: %v", what, d, err)
	}
}

// pickAndPress is what a visitor does on the page to book or hold a seat:
// pick it (the button matched by seat), type a name, press the button.
func pickAndPress(seat, customer, button string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(seat),
		chromedp.WaitVisible(seat+".picked"),
		chromedp.SendKeys("#customer", customer),
		chromedp.Click(button),
	)
}

// until waits for a JavaScript expression to be true on the page, for at
// most d, and fails the test naming what it waited for.
func until(t *testing.T, ctx context.Context, d time.Duration, what, expression string) {
	t.Helper()
	within(t, ctx, d, what, chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingTimeout(d)))
}

// evaluate returns the value of a JavaScript expression on the page.
func evaluate[T any](t *testing.T, ctx context.Context, expression string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expression, err)
	}
	return v
}

// shown returns what a person sees of the elements that match a selector:
// the text of those displayed, without their hidden parts, in document
// order.
func shown(t *testing.T, ctx context.Context, selector string) []string {
	t.Helper()
	return evaluate[[]string](t, ctx, `[...document.querySelectorAll(`+strconv.Quote(selector)+`)]`+
		`.filter(e => e.getClientRects().length > 0).map(e => (e.innerText ?? e.textContent).trim())`)
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

	t.Run("without demo mode there is no lock timeline and no legend for it", func(t *testing.T) {
		if n := evaluate[int](t, ctx, `document.querySelectorAll(".demo-only").length`); n < 3 {
			t.Fatalf("%d demo-only elements on the page, want the two legend entries and the timeline", n)
		}
		if got := shown(t, ctx, ".demo-only"); len(got) > 0 {
			t.Errorf("shown without demo mode: %q", got)
		}
		if legend := shown(t, ctx, "#legend"); len(legend) != 1 || strings.Contains(legend[0], "locked") {
			t.Errorf("legend %q, want one without the lock's entries", legend)
		}
		if note := shown(t, ctx, ".not-demo"); len(note) != 1 || !strings.Contains(note[0], "DEMO_MODE=true") {
			t.Errorf("note %q, want one saying how to see the lock timeline", note)
		}
	})

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
		// The server's default guard, named by its two halves.
		if !strings.Contains(counts, "guard fence (seats free + token newer)") {
			t.Errorf("counts %q, want the fenced guard's two checks named", counts)
		}
	})

	t.Run("a seat booked by clicking shows the token", func(t *testing.T) {
		err := chromedp.Do(ctx,
			pickAndPress(seat("A3"), "clicker", "#confirm"),
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
		if !strings.Contains(counts, "guard off (blind write)") {
			t.Errorf("%s: counts %q, want the guard named a blind write", how, counts)
		}
		if how == "live" {
			// Both were confirmed; the later blind write took the seat, so
			// the earlier booking is lost.
			until(t, ctx, 5*time.Second, "two B2 sections listed", `document.querySelectorAll("#timeline li").length === 2`)
			outcomes := evaluate[[]string](t, ctx, `[...document.querySelectorAll("#timeline li")].map(li => li.dataset.outcome).sort()`)
			if !slices.Equal(outcomes, []string{"booked", "lost"}) {
				t.Errorf("outcomes of the two B2 sections %q, want one booked and one lost", outcomes)
			}
		}
	}
}

// The lock timeline, as a person reads it: under a heading, a seat is
// outlined while a booking request has it locked and marked when two have
// it locked at once (lock=none lets them); each section that ended is
// listed with how long it lasted and how it ended; and the picture draws
// each section as a bar in its seat's row, red where two overlapped.
func TestSeatMapShowsCriticalSections(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, map[string]string{"DEMO_MODE": "true"})
	s := createScreening(t, api.url, `{"id":"browser-locks","movie":"Locks","rows":2,"seats_per_row":4,"lock":"none","guard":"fence","payment_delay_ms":1500}`)
	seat := func(id string) string { return `button.seat[data-seat="` + id + `"]` }
	within(t, ctx, 20*time.Second, "loading the page", chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible(seat("B4")))
	classes := func(id string) string {
		t.Helper()
		return evaluate[string](t, ctx, `document.querySelector('`+seat(id)+`').className`)
	}

	if h := shown(t, ctx, "#lock-timeline h2"); len(h) == 0 || !strings.HasPrefix(h[0], "Lock timeline") {
		t.Errorf("headings of the timeline %q, want one that names it", h)
	}
	if legend := shown(t, ctx, "#legend .demo-only"); len(legend) != 2 || !strings.Contains(legend[1], "two requests at once") {
		t.Errorf("demo legend entries %q, want the locked seat and the seat locked twice", legend)
	}

	// One request alone on A1, two at once on B2: each pays 1.5 s inside
	// its section, and the fenced write refuses the second B2.
	answers := make(chan response, 3)
	for _, b := range []struct{ customer, seat string }{{"ann", "A1"}, {"bob", "B2"}, {"cat", "B2"}} {
		go func() {
			answers <- call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody(b.customer, b.seat))
		}()
	}
	within(t, ctx, 5*time.Second, "A1 shown locked and B2 locked twice",
		chromedp.WaitVisible(seat("A1")+".locked"), chromedp.WaitVisible(seat("B2")+".locked-twice"))
	if c := classes("A1"); strings.Contains(c, "twice") {
		t.Errorf("A1 has one request inside, yet its classes are %q", c)
	}
	until(t, ctx, 5*time.Second, "#locks naming A1 and B2, B2 twice",
		`document.getElementById("locks").textContent === "Locked now: A1, B2 — by two requests at once: B2"`)

	statuses := map[int]int{}
	for range 3 {
		statuses[(<-answers).status]++
	}
	if statuses[201] != 2 || statuses[409] != 1 {
		t.Fatalf("answers %v, want A1 and one B2 booked, the other B2 refused by the fenced write", statuses)
	}
	within(t, ctx, 5*time.Second, "three ended sections listed and B2 booked",
		chromedp.WaitVisible(`#timeline li:nth-child(3)`), chromedp.WaitVisible(seat("B2")+".booked"))
	for _, id := range []string{"A1", "B2"} {
		if c := classes(id); strings.Contains(c, "locked") {
			t.Errorf("%s still shown locked after every request answered: %q", id, c)
		}
	}
	if now := shown(t, ctx, "#locks"); len(now) != 1 || now[0] != "No seat is locked now." {
		t.Errorf("#locks %q, want no seat locked", now)
	}

	t.Run("each ended section is listed with its outcome", func(t *testing.T) {
		lines := evaluate[[]string](t, ctx, `[...document.querySelectorAll('#timeline li')].map(li => li.className + '|' + li.textContent)`)
		var b2 []string
		for _, l := range lines {
			if !strings.Contains(l, ": locked 1.") && !strings.Contains(l, ": locked 2.") {
				t.Errorf("timeline line %q, want a section of about 1.5 s", l)
			}
			switch {
			case strings.HasPrefix(l, "|A1: ") && strings.Contains(l, "✓ booked"):
			case strings.HasPrefix(l, "twice|B2: ") && strings.Contains(l, "another request had B2 locked at the same time"):
				b2 = append(b2, l)
			default:
				t.Errorf("timeline line %q, want A1 booked alone or B2 with another request", l)
			}
		}
		booked := slices.IndexFunc(b2, func(l string) bool { return strings.Contains(l, "✓ booked") })
		refused := slices.IndexFunc(b2, func(l string) bool { return strings.Contains(l, "✗ refused") })
		if len(b2) != 2 || booked < 0 || refused < 0 {
			t.Errorf("B2 lines %q, want one booked and one refused", b2)
		}
		summary := shown(t, ctx, "#sections-summary")
		if want := "3 sections drawn: 2 booked, 0 lost, 1 refused; 2 had a seat locked by another request at the same time."; len(summary) != 1 || summary[0] != want {
			t.Errorf("summary %q, want %q", summary, want)
		}
	})

	t.Run("the picture: seats down the side, time along the bottom, overlaps red", func(t *testing.T) {
		if got := shown(t, ctx, "#chart text.seat-label"); !slices.Equal(got, []string{"A1", "B2"}) {
			t.Errorf("rows %q, want A1 and B2", got)
		}
		ticks := shown(t, ctx, "#chart text.tick-label")
		clock := regexp.MustCompile(`^\d\d:\d\d:\d\d(\.\d+)?$`)
		if len(ticks) < 3 || !clock.MatchString(ticks[0]) {
			t.Errorf("time axis %q, want at least 3 ticks that read as a clock", ticks)
		}
		type rect struct {
			Seat, Outcome, Fill string
			X, Width            float64
		}
		rects := func(selector string) []rect {
			return evaluate[[]rect](t, ctx, `[...document.querySelectorAll(`+strconv.Quote(selector)+`)].map(r => ({`+
				`Seat: r.dataset.seat, Outcome: r.dataset.outcome || "", Fill: getComputedStyle(r).fill,`+
				`X: r.getBBox().x, Width: r.getBBox().width}))`)
		}
		bars := rects("#chart rect.bar")
		var outcomes []string
		for _, b := range bars {
			outcomes = append(outcomes, b.Seat+" "+b.Outcome)
		}
		slices.Sort(outcomes)
		if want := []string{"A1 booked", "B2 booked", "B2 refused"}; !slices.Equal(outcomes, want) {
			t.Fatalf("bars %q, want %q", outcomes, want)
		}
		red := rects("#chart rect.overlap")
		for _, b := range bars {
			covered := 0.0
			for _, r := range red {
				if r.Seat == b.Seat && r.X >= b.X-0.5 && r.X+r.Width <= b.X+b.Width+0.5 {
					covered += r.Width
				}
			}
			switch {
			case b.Seat == "A1" && covered > 0:
				t.Errorf("A1's bar, alone in its seat, is drawn red over %.0f px", covered)
			case b.Seat == "B2" && covered < b.Width/2:
				t.Errorf("B2's %s bar is %.0f px long and red over only %.0f px; the two B2 requests overlapped for most of their sections", b.Outcome, b.Width, covered)
			}
		}
		for _, r := range red {
			if r.Fill != "rgb(224, 0, 0)" {
				t.Errorf("an overlap is drawn in %s, want red", r.Fill)
			}
		}
	})
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
	within(t, ctx, 20*time.Second, "loading the page", chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible(seat("B4")))

	t.Run("a hold made elsewhere shows held, and its release frees the seat", func(t *testing.T) {
		h := mustHold(t, api.url, s.ID, "outside", "B2")
		within(t, ctx, 5*time.Second, "B2 shown held", chromedp.WaitVisible(seat("B2")+".held"))
		title, err := chromedp.Run(ctx, chromedp.AttributeValue(seat("B2"), "title"))
		if err != nil || !strings.Contains(title.Value, "held until") {
			t.Errorf("B2's title %q (%v), want its expiry", title.Value, err)
		}
		// The countdown is on the page, not only in a tooltip, and counts.
		hold := `#held-now .hold[data-seats="B2"]`
		first := shown(t, ctx, hold)
		if len(first) != 1 || !regexp.MustCompile(`^B2 [01]:\d\d left$`).MatchString(first[0]) {
			t.Fatalf("holds shown %q, want B2 with about 1:00 left", first)
		}
		until(t, ctx, 5*time.Second, "B2's countdown ticking down from "+first[0],
			`(document.querySelector('`+hold+`') || {}).textContent !== `+strconv.Quote(first[0]))
		counts, err := chromedp.Run(ctx, chromedp.Text("#info"))
		if err != nil || !strings.Contains(counts, "held 1") || !strings.Contains(counts, "free 7") {
			t.Errorf("counts %q (%v), want 1 held and 7 free", counts, err)
		}
		if r := call(t, "DELETE", api.url+"/v1/holds/"+h.ID, "", "Authorization", "Bearer "+h.Token); r.status != 204 {
			t.Fatalf("release: %d %s", r.status, r.body)
		}
		within(t, ctx, 5*time.Second, "B2 shown free after its release", chromedp.WaitVisible(seat("B2")+`[data-status="free"]`))
		if got := shown(t, ctx, "#held-now"); len(got) > 0 {
			t.Errorf("holds shown after the release: %q", got)
		}
	})

	t.Run("the page holds, counts down and confirms", func(t *testing.T) {
		within(t, ctx, 20*time.Second, "A3 held by clicking, with a countdown",
			pickAndPress(seat("A3"), "holder", "#hold"),
			chromedp.WaitVisible("#countdown"),
			chromedp.WaitVisible(seat("A3")+".held"),
		)
		left, err := chromedp.Run(ctx, chromedp.Text("#countdown"))
		if err != nil || !strings.HasSuffix(left, "left") || !strings.HasPrefix(left, "0:") && !strings.HasPrefix(left, "1:") {
			t.Errorf("countdown %q (%v), want about 1:00 left", left, err)
		}
		if got := shown(t, ctx, `#held-now .hold[data-seats="A3"]`); len(got) != 1 || !strings.HasSuffix(got[0], "left (yours)") {
			t.Errorf("holds shown %q, want A3's, as this page's", got)
		}
		if _, seats := seatsOf(t, api.url, s.ID); seats["A3"].Status != "held" {
			t.Errorf("A3 is %q on the server, want held", seats["A3"].Status)
		}
		within(t, ctx, 10*time.Second, "the hold confirmed into a booking",
			chromedp.Click("#confirm-hold"), chromedp.WaitVisible("#token"), chromedp.WaitVisible(seat("A3")+".booked"))
		if _, seats := seatsOf(t, api.url, s.ID); seats["A3"].Status != "booked" {
			t.Errorf("A3 is %q on the server, want booked", seats["A3"].Status)
		}
	})

	t.Run("an expired hold frees its seat with no event", func(t *testing.T) {
		within(t, ctx, 20*time.Second, "loading the page of "+short.ID, chromedp.Navigate(api.url+"/?screening="+short.ID), chromedp.WaitVisible(seat("A2")))
		mustHold(t, api.url, short.ID, "walker", "A1")
		within(t, ctx, 5*time.Second, "A1 shown held", chromedp.WaitVisible(seat("A1")+".held"))
		within(t, ctx, 10*time.Second, "A1 shown free after its hold of 1s expired", chromedp.WaitVisible(seat("A1")+`[data-status="free"]`))
	})
}

// TestSeatMapShowsQueue opens the seat map of a screening with a waiting
// room, has buyers join from outside, and watches the page count them
// waiting, then admitted at the queue's pace; a screening without one
// shows no waiting room.
func TestSeatMapShowsQueue(t *testing.T) {
	ctx := browser(t)
	api := startAPI(t, nil)
	plain := createScreening(t, api.url, `{"id":"browser-plain","movie":"No line","rows":1,"seats_per_row":3}`)
	s := createScreening(t, api.url, `{"id":"browser-queue","movie":"On sale","rows":2,"seats_per_row":4,"queue":{"admit_per_s":1}}`)

	within(t, ctx, 10*time.Second, "the map of a screening without a waiting room",
		chromedp.Navigate(api.url+"/?screening="+plain.ID), chromedp.WaitVisible(`button.seat[data-seat="A3"]`))
	if got := shown(t, ctx, "#queue"); len(got) > 0 {
		t.Errorf("shown without a waiting room: %q", got)
	}

	within(t, ctx, 10*time.Second, "the waiting room of the screening",
		chromedp.Navigate(api.url+"/?screening="+s.ID), chromedp.WaitVisible("#queue"))
	if got := shown(t, ctx, "#queue"); len(got) != 1 || !strings.Contains(got[0], "waiting 0") ||
		!strings.Contains(got[0], "admitted 0") || !strings.Contains(got[0], "up to 1 a second") {
		t.Fatalf("waiting room %q, want nobody waiting or admitted, at 1 a second", got)
	}
	for i := range 3 {
		if r := call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/queue", `{"customer":"buyer `+strconv.Itoa(i)+`"}`); r.status != 201 {
			t.Fatalf("join %d: %d %s", i, r.status, r.body)
		}
	}
	// At 1 a second the third buyer waits two seconds: the page counts
	// every buyer, and shows them all admitted at the end.
	until(t, ctx, 20*time.Second, "all three buyers shown admitted",
		`document.getElementById("queue-admitted").textContent === "admitted 3" &&
		 document.getElementById("queue-waiting").textContent === "waiting 0"`)
}
