package main

import (
	"net/http"
	"testing"
	"time"
)

// TestGracefulShutdown ends run's context while a booking is in its payment
// delay: the booking still completes with 201, and run returns nil.
func TestGracefulShutdown(t *testing.T) {
	api := startAPI(t, map[string]string{"PAYMENT_DELAY": "800ms"})
	s := createScreening(t, api.url, `{"movie":"Last show","rows":1,"seats_per_row":2}`)
	booked := make(chan response, 1)
	go func() {
		booked <- call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("late", "A1"))
	}()
	waitInFlight(t, api.url, 1)

	stopped := make(chan error, 1)
	go func() { stopped <- api.stop() }()

	select {
	case r := <-booked:
		if r.status != http.StatusCreated {
			t.Errorf("booking in flight at shutdown: %d %s", r.status, r.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the booking in flight did not finish")
	}
	if err := <-stopped; err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
	if _, err := httpClient.Get(api.url + "/healthz"); err == nil {
		t.Errorf("the server still answers after run returned")
	}
}
