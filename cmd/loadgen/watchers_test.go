package main

import "testing"

// TestWatchersAgainstRealAPI opens event streams on two real instances
// sharing Redis: every stream must receive every booking of the run,
// whichever instance took it.
func TestWatchersAgainstRealAPI(t *testing.T) {
	targets := startTwoAPIs(t, buildAPI(t))

	const watchers, requests = 6, 100
	rep, err := runJSON(t, "-targets", targets, "-scenario", "spread", "-clients", "8",
		"-requests", "100", "-watchers", "6")
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if rep.Succeeded != requests {
		t.Fatalf("%d of %d bookings confirmed", rep.Succeeded, requests)
	}
	if rep.Watchers != watchers || rep.EventsReceived != watchers*requests || rep.WatchersCut != 0 {
		t.Errorf("watchers %d, events received %d, cut %d; want %d, %d, 0",
			rep.Watchers, rep.EventsReceived, rep.WatchersCut, watchers, watchers*requests)
	}
}
