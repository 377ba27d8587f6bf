package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/seatlock/seatlock/httpapi"
	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/internal/wait"
	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/redisqueue"
)

// cluster is API instances that share one store and one real Redis, each
// with a Redis client and a queue of its own, as separate processes have.
type cluster []http.Handler

func newCluster(t *testing.T, n int, leaveAfter time.Duration) cluster {
	t.Helper()
	return newClusterWith(t, n, leaveAfter, httpapi.Options{})
}

// newClusterWith is newCluster whose instances' servers all have opts.
func newClusterWith(t *testing.T, n int, leaveAfter time.Duration, srvOpts httpapi.Options) cluster {
	t.Helper()
	store := memory.New()
	var c cluster
	for range n {
		q, err := redisqueue.New(testenv.RedisClient(t, testenv.RedisURL(t)), redisqueue.Options{})
		if err != nil {
			t.Fatal(err)
		}
		svc := reservation.NewService(store, reservation.Options{Demo: true, DefaultLock: reservation.LockNone, Queue: q, QueueLeaveAfter: leaveAfter})
		c = append(c, httpapi.NewServer(svc, srvOpts))
	}
	return c
}

// answer is a status and a decoded JSON body.
type answer struct {
	status int
	body   map[string]any
}

func (a answer) str(key string) string { s, _ := a.body[key].(string); return s }

func (a answer) code() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (a answer) num(key string) float64 { f, _ := a.body[key].(float64); return f }

func do(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewBufferString(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	a := answer{status: w.Code}
	if w.Body.Len() > 0 {
		if err := json.Unmarshal(w.Body.Bytes(), &a.body); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, w.Code, w.Body, err)
		}
	}
	return a
}

// screening creates a screening with the queue JSON (none when empty).
func (c cluster) screening(t *testing.T, queue string) string {
	t.Helper()
	id := "q" + uuid.NewString()[:8]
	body := fmt.Sprintf(`{"id":%q,"movie":"On sale","rows":2,"seats_per_row":5`, id)
	if queue != "" {
		body += `,"queue":` + queue
	}
	if a := do(t, c[0], "POST", "/v1/screenings", "", body+"}"); a.status != http.StatusCreated {
		t.Fatalf("create: %d %v", a.status, a.body)
	}
	return id
}

// entry is a buyer in a queue.
type entry struct{ id, token string }

func (c cluster) join(t *testing.T, screening string, n int) []entry {
	t.Helper()
	var out []entry
	for i := range n {
		a := do(t, c[i%len(c)], "POST", "/v1/screenings/"+screening+"/queue", "", fmt.Sprintf(`{"customer":"buyer %d"}`, i))
		if a.status != http.StatusCreated || a.str("token") == "" || a.str("screening_id") != screening {
			t.Fatalf("join %d: %d %v", i, a.status, a.body)
		}
		out = append(out, entry{a.str("id"), a.str("token")})
	}
	return out
}

// TestQueueAdmitsInOrderAcrossInstances joins buyers through two instances
// in turn; each tries to hold a seat through the other instance until it
// may, the last to join first. After every round the buyers who hold are
// the first ones to join: one who held proves that everyone before them
// was admitted when they tried, later in the round. A hold refused says
// the buyer's position.
func TestQueueAdmitsInOrderAcrossInstances(t *testing.T) {
	c := newCluster(t, 2, time.Minute)
	sc := c.screening(t, `{"admit_per_s":5}`)
	buyers := c.join(t, sc, 6)
	held := make([]bool, len(buyers))
	wait.For(t, 30*time.Second, "every buyer held a seat", func() bool {
		for i := len(buyers) - 1; i >= 0; i-- {
			if held[i] {
				continue
			}
			a := do(t, c[(i+1)%2], "POST", "/v1/screenings/"+sc+"/holds", buyers[i].token, `{"count":1,"customer":"b"}`)
			switch {
			case a.status == http.StatusCreated:
				held[i] = true
			case a.status == http.StatusForbidden && a.code() == "not_admitted":
				e, _ := a.body["error"].(map[string]any)
				if pos, _ := e["position"].(float64); pos < 1 {
					t.Fatalf("buyer %d refused without a position: %v", i, a.body)
				}
			default:
				t.Fatalf("buyer %d: %d %v", i, a.status, a.body)
			}
		}
		n := 0
		for n < len(held) && held[n] {
			n++
		}
		if slices.Contains(held[n:], true) {
			t.Fatalf("buyers who hold: %v; want the first ones to join", held)
		}
		return n == len(held)
	})
}

// TestQueueEntry answers a buyer's entry to its token only, and tells
// when the admission ends.
func TestQueueEntry(t *testing.T) {
	c := newCluster(t, 2, time.Minute)
	sc := c.screening(t, `{"admit_per_s":1,"admitted_for_ms":60000}`)
	buyers := c.join(t, sc, 2)
	first := do(t, c[1], "GET", "/v1/queue/"+buyers[0].id, buyers[0].token, "")
	if first.status != http.StatusOK || first.body["admitted"] != true || first.str("admitted_until") == "" || first.str("token") != "" {
		t.Fatalf("the first buyer: %d %v; want admitted, until when, and no token", first.status, first.body)
	}
	second := do(t, c[0], "GET", "/v1/queue/"+buyers[1].id, buyers[1].token, "")
	if second.status != http.StatusOK || second.body["admitted"] != false || second.num("position") < 1 {
		t.Fatalf("the second buyer: %d %v; want waiting at a position", second.status, second.body)
	}
	for _, tc := range []struct {
		name, path, token string
		status            int
	}{
		{"no token", "/v1/queue/" + buyers[0].id, "", http.StatusUnauthorized},
		{"another buyer's token", "/v1/queue/" + buyers[0].id, buyers[1].token, http.StatusForbidden},
		{"no such entry", "/v1/queue/" + uuid.NewString(), buyers[0].token, http.StatusNotFound},
		{"no uuid", "/v1/queue/nope", buyers[0].token, http.StatusNotFound},
	} {
		if a := do(t, c[0], "GET", tc.path, tc.token, ""); a.status != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, a.status, a.body, tc.status)
		}
	}
}

// TestQueueRefusals: a screening with a waiting room refuses holds and
// bookings without an admitted token, and after the admission; one
// without refuses joining.
func TestQueueRefusals(t *testing.T) {
	c := newCluster(t, 1, time.Minute)
	sc := c.screening(t, `{"admit_per_s":1,"admitted_for_ms":1000}`)
	buyers := c.join(t, sc, 2)
	for _, tc := range []struct {
		name, path, token, body, code string
	}{
		{"a booking without a token", "/bookings", "", `{"seats":["A1"],"customer":"x"}`, "not_admitted"},
		{"a hold without a token", "/holds", "", `{"count":1,"customer":"x"}`, "not_admitted"},
		{"a token of no entry", "/holds", "nope", `{"count":1,"customer":"x"}`, "not_admitted"},
		{"a waiting buyer's booking", "/bookings", buyers[1].token, `{"seats":["A1"],"customer":"x"}`, "not_admitted"},
	} {
		a := do(t, c[0], "POST", "/v1/screenings/"+sc+tc.path, tc.token, tc.body)
		if a.status != http.StatusForbidden || a.code() != tc.code {
			t.Errorf("%s: %d %v, want 403 %s", tc.name, a.status, a.body, tc.code)
		}
	}
	if a := do(t, c[0], "POST", "/v1/screenings/"+sc+"/bookings", buyers[0].token, `{"seats":["A1"],"customer":"x"}`); a.status != http.StatusCreated {
		t.Fatalf("the admitted buyer's booking: %d %v", a.status, a.body)
	}
	// The admission is checked before the seats: while it lasts, the
	// booked seat is seat_taken.
	wait.For(t, 20*time.Second, "the admission of 1s ended", func() bool {
		a := do(t, c[0], "POST", "/v1/screenings/"+sc+"/bookings", buyers[0].token, `{"seats":["A1"],"customer":"x"}`)
		if a.code() != "seat_taken" && a.code() != "admission_expired" {
			t.Fatalf("the admitted buyer's booking again: %d %v", a.status, a.body)
		}
		return a.status == http.StatusForbidden
	})
	plain := c.screening(t, "")
	if a := do(t, c[0], "POST", "/v1/screenings/"+plain+"/queue", "", `{"customer":"x"}`); a.status != http.StatusConflict || a.code() != "no_queue" {
		t.Errorf("joining a screening without a waiting room: %d %v, want 409 no_queue", a.status, a.body)
	}
	if a := do(t, c[0], "POST", "/v1/screenings/"+plain+"/holds", "", `{"count":1,"customer":"x"}`); a.status != http.StatusCreated {
		t.Errorf("a hold on a screening without a waiting room: %d %v, want 201", a.status, a.body)
	}
	if a := do(t, c[0], "POST", "/v1/screenings/nope/queue", "", `{"customer":"x"}`); a.status != http.StatusNotFound {
		t.Errorf("joining no screening: %d %v, want 404", a.status, a.body)
	}
}

// TestQueueLeaves: a buyer nobody asks about leaves the line after the
// service's QueueLeaveAfter; the one behind moves up.
func TestQueueLeaves(t *testing.T) {
	c := newCluster(t, 2, 300*time.Millisecond)
	sc := c.screening(t, `{"admit_per_s":1}`)
	buyers := c.join(t, sc, 3)
	wait.For(t, 20*time.Second, "the unasked buyer left", func() bool {
		a := do(t, c[1], "GET", "/v1/queue/"+buyers[2].id, buyers[2].token, "")
		return a.num("position") == 1 || a.body["admitted"] == true
	})
	if a := do(t, c[0], "GET", "/v1/queue/"+buyers[1].id, buyers[1].token, ""); a.status != http.StatusNotFound {
		t.Errorf("the buyer nobody asked about: %d %v, want 404", a.status, a.body)
	}
}

// TestQueueBadInput: the queue settings and the join body are checked.
func TestQueueBadInput(t *testing.T) {
	c := newCluster(t, 1, time.Minute)
	for _, queue := range []string{`{"admit_per_s":0}`, `{"admit_per_s":10001}`, `{"admit_per_s":5,"admitted_for_ms":999}`,
		`{"admit_per_s":5,"admitted_for_ms":9223372036854775807}`, `{"admit_per_s":"5"}`, `{"admit_per_s":5,"pace":1}`, `[]`} {
		body := `{"movie":"m","rows":1,"seats_per_row":1,"queue":` + queue + `}`
		if a := do(t, c[0], "POST", "/v1/screenings", "", body); a.status != http.StatusBadRequest {
			t.Errorf("queue %s: %d %v, want 400", queue, a.status, a.body)
		}
	}
	sc := c.screening(t, `{"admit_per_s":5}`)
	for _, body := range []string{`{}`, `{"customer":""}`, `{"customer":"x","extra":1}`, `not json`} {
		if a := do(t, c[0], "POST", "/v1/screenings/"+sc+"/queue", "", body); a.status != http.StatusBadRequest {
			t.Errorf("join %s: %d %v, want 400", body, a.status, a.body)
		}
	}
	a := do(t, c[0], "GET", "/v1/screenings/"+sc, "", "")
	q, _ := a.body["queue"].(map[string]any)
	if q["admit_per_s"] != 5.0 || q["admitted_for_ms"] != 600000.0 {
		t.Errorf("the screening shows its queue as %v, want admit_per_s 5 and the default admitted_for_ms", a.body["queue"])
	}
}
