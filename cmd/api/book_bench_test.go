package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/reservation"
)

// BenchmarkBook measures the work of one booking on the API's own side:
// POST /v1/screenings/{id}/bookings through the handler of run, with the
// default strategy (keyed+redis, guard fence), every booking a different
// seat (loadgen's spread), 64 at once. The store is in memory, so the
// figure is the HTTP handler, the service, the locks' client side and the
// event, not the database; allocs/op is what the garbage collector gets
// per booking. The net/http server's own reading and writing are left
// out: the handler is called with a recorder.
//
// With TEST_REDIS_URL set the locks and the events go to that Redis;
// without, to an embedded one in this process, whose work then counts too.
//
//	go test ./cmd/api -run '^$' -bench Book -benchmem
func BenchmarkBook(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := parseConfig(nil, func(k string) string {
		if k == "REDIS_URL" {
			return os.Getenv("TEST_REDIS_URL")
		}
		return ""
	}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	// The server's own logger, writing where nothing is kept: the log
	// line's formatting counts, its write does not.
	logger, flush := newLogger(io.Discard)
	defer flush()
	a, err := openApp(ctx, cfg, prometheus.NewRegistry(), logger)
	if err != nil {
		b.Fatal(err)
	}
	defer a.close(logger)
	svc, handler := a.svc, a.handler

	// Enough screenings for every booking of the run to have a seat of its own.
	const rows, perRow = reservation.MaxRows, 100
	var screenings []string
	for range b.N/(rows*perRow) + 1 {
		sc, err := svc.CreateScreening(ctx, reservation.NewScreening{Movie: "bench", Rows: rows, SeatsPerRow: perRow})
		if err != nil {
			b.Fatal(err)
		}
		screenings = append(screenings, sc.ID)
	}
	var next, failed atomic.Int64
	b.SetParallelism(32) // 64 clients on 2 cores, as loadgen's 64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			seat := i % (rows * perRow)
			body := fmt.Sprintf(`{"seats":[%q],"customer":"bench"}`, reservation.SeatID(seat/perRow, seat%perRow+1))
			req := httptest.NewRequest(http.MethodPost, "/v1/screenings/"+screenings[i/(rows*perRow)]+"/bookings", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, req)
			if w.Code != http.StatusCreated {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d bookings not answered 201", n, b.N)
	}
}
