package httpapi_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/httpapi"
)

// TestMetricLabelsAreBounded sends requests whose method, path, ids, query
// and headers are the client's invention, and checks that none of it
// reaches a label of /metrics: every label value must come from the
// server's own small sets (route templates, standard methods, statuses),
// or one client could create series without end.
func TestMetricLabelsAreBounded(t *testing.T) {
	hs := newHarness(t, httpapi.Options{Registry: prometheus.NewRegistry()})
	mark := "zq" + strings.ReplaceAll(uuid.NewString(), "-", "")
	for _, tc := range []struct{ method, target string }{
		{mark, "/healthz"},
		{"G" + mark, "/v1/screenings"},
		{strings.ToLower("GET"), "/v1/screenings/fuzz"},
		{"GET", "/v1/screenings/" + mark},
		{"GET", "/v1/screenings/" + mark + "/seats"},
		{"GET", "/v1/bookings/" + mark},
		{"DELETE", "/v1/bookings/" + mark},
		{"POST", "/v1/screenings/" + mark + "/bookings"},
		{"GET", "/" + mark},
		{"GET", "/v1/" + mark + "?" + mark + "=" + mark},
		{"PROPFIND", "/v1/screenings/" + mark},
	} {
		r := httptest.NewRequest("GET", tc.target, nil)
		r.Method = tc.method
		r.Header.Set("X-Request-ID", mark)
		r.Header.Set("User-Agent", mark)
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, r)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	out := w.Body.String()
	if w.Code != 200 || !strings.Contains(out, "http_requests_total") {
		t.Fatalf("metrics: %d\n%s", w.Code, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, mark) || strings.Contains(line, `method="get"`) || strings.Contains(line, "PROPFIND") {
			t.Errorf("a label value came from the client: %s", line)
		}
	}
	if !strings.Contains(out, `method="other"`) {
		t.Errorf("no method=\"other\" series for the unknown methods")
	}
}
