package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/internal/testenv"
)

// queueFigures is the waiting room as a live stream tells it.
type queueFigures struct {
	ScreeningID    string `json:"screening_id"`
	Waiting        int    `json:"waiting"`
	Admitted       int    `json:"admitted"`
	AdmitPerSecond int    `json:"admit_per_s"`
}

// sseEvents turns the lines of a stream into its events: name and data.
func sseEvents(lines <-chan string) <-chan [2]string {
	out := make(chan [2]string)
	go func() { // ends when the stream does, at the test's cleanup
		defer close(out)
		var name string
		for line := range lines {
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				out <- [2]string{name, strings.TrimPrefix(line, "data: ")}
			}
		}
	}()
	return out
}

// TestStreamShowsQueue opens the seat map stream of a screening with a
// waiting room on one instance, has buyers join through another, and
// reads the queue's figures in the snapshot and the "queue" events: every
// buyer counted, waiting then admitted at the pace, by whichever instance.
func TestStreamShowsQueue(t *testing.T) {
	hub := httpapi.NewHub(0)
	c := newClusterWith(t, 2, time.Minute, httpapi.Options{Events: hub, QueuePoll: 20 * time.Millisecond})
	srv := httptest.NewServer(c[0])
	t.Cleanup(srv.Close)
	t.Cleanup(hub.Close) // before srv.Close, which waits for the streams

	plain := c.screening(t, "")
	if e := <-sseEvents(testenv.EventStream(t, srv.URL+"/v1/screenings/"+plain+"/events")); e[0] != "snapshot" || strings.Contains(e[1], `"queue"`) {
		t.Fatalf("screening without a waiting room: first event %s %s, want a snapshot without queue", e[0], e[1])
	}

	id := c.screening(t, `{"admit_per_s":1}`)
	events := sseEvents(testenv.EventStream(t, srv.URL+"/v1/screenings/"+id+"/events"))
	deadline := time.After(20 * time.Second)
	read := func(want string) queueFigures {
		t.Helper()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("stream ended before %s", want)
				}
				if e[0] != "snapshot" && e[0] != "queue" {
					continue
				}
				var fig queueFigures
				if e[0] == "snapshot" {
					var snap struct{ Queue *queueFigures }
					if err := json.Unmarshal([]byte(e[1]), &snap); err != nil || snap.Queue == nil {
						t.Fatalf("snapshot %s (%v), want its queue", e[1], err)
					}
					fig = *snap.Queue
				} else if err := json.Unmarshal([]byte(e[1]), &fig); err != nil {
					t.Fatalf("queue event %s: %v", e[1], err)
				}
				if fig.ScreeningID != id || fig.AdmitPerSecond != 1 {
					t.Fatalf("%s %s, want screening %s at 1 a second", e[0], e[1], id)
				}
				return fig
			case <-deadline:
				t.Fatalf("no %s within 20s", want)
			}
		}
	}
	if fig := read("snapshot"); fig.Waiting != 0 || fig.Admitted != 0 {
		t.Fatalf("snapshot before anyone joined: %+v, want zeros", fig)
	}

	const buyers = 4
	c[1:].join(t, id, buyers)
	// At 1 a second, the last of four buyers waits for three seconds: the
	// page sees some of them waiting, then all admitted; every figure counts each buyer
	// once, and the admitted only grow.
	sawWaiting, last := false, queueFigures{}
	for last.Admitted < buyers {
		fig := read("every buyer admitted")
		if fig.Waiting+fig.Admitted > buyers || fig.Admitted < last.Admitted {
			t.Fatalf("queue went from %+v to %+v with %d buyers", last, fig, buyers)
		}
		sawWaiting = sawWaiting || fig.Waiting > 0
		last = fig
	}
	if last.Waiting != 0 || !sawWaiting {
		t.Errorf("ended at %+v, saw someone waiting %v; want all admitted after some waited", last, sawWaiting)
	}
}
