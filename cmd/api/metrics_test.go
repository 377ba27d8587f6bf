package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestLayerMetrics books under keyed+redis, holding the seat long enough
// for the watchdog to renew its lease: each layer has its own lock
// series, the layered strategy has none of its own, and the renewals are
// counted.
func TestLayerMetrics(t *testing.T) {
	// The shortest lease (450ms) is renewed every 150ms: the 400ms
	// payment renews it twice.
	api := startAPI(t, nil, "-lock-ttl", minLockTTL.String())
	s := createScreening(t, api.url, `{"movie":"Layers","rows":1,"seats_per_row":2,"lock":"keyed+redis","payment_delay_ms":400}`)
	if r := call(t, "POST", api.url+"/v1/screenings/"+s.ID+"/bookings", bookingBody("ann", "A1")); r.status != http.StatusCreated {
		t.Fatalf("booking: %d %s", r.status, r.body)
	}
	metrics := string(call(t, "GET", api.url+"/metrics", "").body)
	for _, want := range []string{
		`seatlock_lock_wait_seconds_count{layer="keyed",outcome="acquired"} 1`,
		`seatlock_lock_wait_seconds_count{layer="redis",outcome="acquired"} 1`,
		`seatlock_lock_hold_seconds_count{layer="keyed"} 1`,
		`seatlock_lock_hold_seconds_count{layer="redis"} 1`,
		`seatlock_lock_renewals_total{layer="redis",result="renewed"}`,
		`seatlock_bookings_total{outcome="confirmed",strategy="keyed+redis"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(metrics, `layer="keyed+redis"`) {
		t.Errorf("metrics have a keyed+redis layer: the layered strategy is counted again as a whole")
	}
	if strings.Contains(metrics, `seatlock_lock_renewals_total{layer="redis",result="renewed"} 0`) {
		t.Errorf("no renewal counted during a 400ms hold of a %v lease", minLockTTL)
	}
}
