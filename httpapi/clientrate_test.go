package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/seatlock/seatlock/httpapi"
)

// TestScreeningRatePerClient checks the per-client bound on screening
// creation: a client address that used up its burst is answered 429
// rate_limited with Retry-After and creates nothing, while another
// address still creates; an IPv6 client is its /64; and with an admin
// token guarding creation nobody is limited.
func TestScreeningRatePerClient(t *testing.T) {
	const body = `{"movie":"Rate","rows":1,"seats_per_row":1}`
	create := func(t *testing.T, hs *harness, addr, auth string) int {
		t.Helper()
		r, _ := newRequest("POST", "/v1/screenings", []byte(body))
		r.RemoteAddr = addr
		if auth != "" {
			r.Header.Set("Authorization", "Bearer "+auth)
		}
		w := hs.serve(t, r)
		if w.Code == http.StatusTooManyRequests {
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code != "rate_limited" || e.Error.Message == "" {
				t.Errorf("429 body %s: want a JSON error rate_limited with a message", w.Body)
			}
			if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("429 Retry-After %q: want whole seconds, at least 1", w.Header().Get("Retry-After"))
			}
		}
		return w.Code
	}
	// One token an hour: nothing refills during the test.
	limited := httpapi.Options{ScreeningRate: 1.0 / 3600, ScreeningBurst: 2}

	t.Run("a client past its burst is refused, others are not", func(t *testing.T) {
		hs := newHarness(t, limited)
		for i := range 2 {
			if code := create(t, hs, "198.51.100.7:4000"+strconv.Itoa(i), ""); code != http.StatusCreated {
				t.Fatalf("creation %d of the burst: %d, want 201", i+1, code)
			}
		}
		if code := create(t, hs, "198.51.100.7:40009", ""); code != http.StatusTooManyRequests {
			t.Errorf("third creation from one address (another port): %d, want 429", code)
		}
		if code := create(t, hs, "198.51.100.8:40000", ""); code != http.StatusCreated {
			t.Errorf("creation from another address: %d, want 201", code)
		}
	})
	t.Run("an IPv6 client is its /64", func(t *testing.T) {
		hs := newHarness(t, limited)
		create(t, hs, "[2001:db8:1:2::1]:4000", "")
		create(t, hs, "[2001:db8:1:2::2]:4000", "")
		if code := create(t, hs, "[2001:db8:1:2:ffff::3]:4000", ""); code != http.StatusTooManyRequests {
			t.Errorf("third creation from one /64: %d, want 429", code)
		}
		if code := create(t, hs, "[2001:db8:1:3::1]:4000", ""); code != http.StatusCreated {
			t.Errorf("creation from another /64: %d, want 201", code)
		}
	})
	t.Run("the admin is not limited", func(t *testing.T) {
		opts := limited
		opts.AdminToken = adminToken
		hs := newHarness(t, opts)
		for i := range 3 {
			if code := create(t, hs, "198.51.100.7:40000", adminToken); code != http.StatusCreated {
				t.Fatalf("admin creation %d: %d, want 201", i+1, code)
			}
		}
	})
}
