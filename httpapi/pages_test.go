package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/reservation"
)

// TestScreeningPages walks GET /v1/screenings page by page: every
// screening once, oldest first, each page at most limit long, and a null
// next on the last page only.
func TestScreeningPages(t *testing.T) {
	hs := newHarness(t, httpapi.Options{})
	want := []string{"fuzz"}
	for i := range 6 {
		id := fmt.Sprintf("page-%d", i)
		if _, err := hs.svc.CreateScreening(context.Background(), reservation.NewScreening{ID: id, Movie: "M", Rows: 1, SeatsPerRow: 1}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	for _, limit := range []int{1, 2, 3, 7, 1000} {
		var got []string
		pages := 0
		after := ""
		for {
			target := fmt.Sprintf("/v1/screenings?limit=%d", limit)
			if after != "" {
				target += "&after=" + url.QueryEscape(after)
			}
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
			if w.Code != 200 {
				t.Fatalf("GET %s: %d %s", target, w.Code, w.Body)
			}
			var page struct {
				Screenings []struct{ ID string }
				Next       *string
			}
			if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
				t.Fatal(err)
			}
			pages++
			if len(page.Screenings) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(page.Screenings))
			}
			for _, sc := range page.Screenings {
				got = append(got, sc.ID)
			}
			if page.Next == nil {
				break
			}
			if pages > len(want) {
				t.Fatalf("limit %d: more pages than screenings", limit)
			}
			after = *page.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: listed %v, want %v", limit, got, want)
		}
		if wantPages := (len(want) + limit - 1) / limit; pages != wantPages {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/screenings", nil))
	var page struct{ Screenings []json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || len(page.Screenings) != len(want) {
		t.Errorf("without a limit: %d screenings, %v; want %d", len(page.Screenings), err, len(want))
	}
}
