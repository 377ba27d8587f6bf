package series_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatlock/seatlock/internal/series"
)

func TestGetResolvesEachKeyOnce(t *testing.T) {
	var resolved atomic.Int64
	c := series.New(func(k int) string {
		resolved.Add(1)
		return fmt.Sprint("value of ", k)
	})
	const keys, goroutines = 20, 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range 100 {
				k := (i + g) % keys
				if got, want := c.Get(k), fmt.Sprint("value of ", k); got != want {
					t.Errorf("Get(%d) = %q, want %q", k, got, want)
				}
			}
		})
	}
	wg.Wait()
	if n := resolved.Load(); n != keys {
		t.Errorf("resolve ran %d times for %d keys, want once per key", n, keys)
	}
}

func TestGetReturnsTheVectorsSeries(t *testing.T) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "answers_total", Help: "h"}, []string{"route", "status"})
	type key struct {
		route  string
		status int
	}
	c := series.New(func(k key) prometheus.Counter { return vec.WithLabelValues(k.route, fmt.Sprint(k.status)) })
	for _, k := range []key{{"/a", 200}, {"/a", 404}, {"/a", 200}, {"/b", 200}} {
		if got, want := c.Get(k), vec.WithLabelValues(k.route, fmt.Sprint(k.status)); got != want {
			t.Errorf("Get(%v) is not the vector's series of its labels", k)
		}
	}
}
