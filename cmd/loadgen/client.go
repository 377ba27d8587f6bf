package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// screening is the part of the API's Screening that loadgen needs.
type screening struct {
	ID             string `json:"id"`
	Rows           int    `json:"rows"`
	SeatsPerRow    int    `json:"seats_per_row"`
	Lock           string `json:"lock"`
	Guard          string `json:"guard"`
	PaymentDelayMS int64  `json:"payment_delay_ms"`
	// Queue is the screening's waiting room (section 10 of the design);
	// nil when it has none.
	Queue *queueSettings `json:"queue,omitempty"`
}

// queueSettings are a waiting room's: how many buyers it admits a
// second.
type queueSettings struct {
	AdmitPerS int `json:"admit_per_s"`
}

// capacity is how many seats the screening has.
func (s *screening) capacity() int { return s.Rows * s.SeatsPerRow }

// createScreening is the body of POST /v1/screenings. The pointer and
// omitempty fields are left out when not set, so the server's defaults apply.
type createScreening struct {
	Movie          string         `json:"movie"`
	Rows           int            `json:"rows"`
	SeatsPerRow    int            `json:"seats_per_row"`
	Lock           string         `json:"lock,omitempty"`
	Guard          string         `json:"guard,omitempty"`
	PaymentDelayMS *int64         `json:"payment_delay_ms,omitempty"`
	HoldTTLMS      *int64         `json:"hold_ttl_ms,omitempty"`
	Queue          *queueSettings `json:"queue,omitempty"`
}

// seatState is one seat of GET /v1/screenings/{id}/seats.
type seatState struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	BookingID string `json:"booking_id,omitempty"`
}

// booking is the part of the API's Booking that loadgen needs.
type booking struct {
	ID       string   `json:"id"`
	Seats    []string `json:"seats"`
	Customer string   `json:"customer"`
}

// apiError is the body of every error answer of the API.
type apiError struct {
	Error struct {
		Code    string   `json:"code"`
		Message string   `json:"message"`
		Seats   []string `json:"seats"` // with seat_taken: the seats that were taken
	} `json:"error"`
}

// statusError is an answer with an unexpected status to one of the set-up
// or verification calls (never to a booking: those are counted, not failed).
type statusError struct {
	status  int
	code    string
	message string
}

func (e *statusError) Error() string {
	if e.code == "" {
		return fmt.Sprintf("HTTP %d", e.status)
	}
	return fmt.Sprintf("HTTP %d %s: %s", e.status, e.code, e.message)
}

// client talks to the seatlock HTTP API of docs/api.md. It is safe
// for concurrent use: its only state is the http.Client, which is.
type client struct {
	http       *http.Client
	adminToken string
}

// newClient returns a client whose transport keeps enough idle connections
// for every concurrent client on every target, so that a run measures the
// server and not TCP handshakes.
func newClient(clients, targets int, timeout time.Duration, adminToken string) *client {
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          clients * targets,
		MaxIdleConnsPerHost:   clients,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &client{
		http:       &http.Client{Transport: transport, Timeout: timeout},
		adminToken: adminToken,
	}
}

// close releases the idle connections.
func (c *client) close() { c.http.CloseIdleConnections() }

// health checks that target answers GET /healthz with 200.
func (c *client) health(ctx context.Context, target string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return c.do(ctx, http.MethodGet, target+"/healthz", nil, http.StatusOK, nil)
}

// startupWait is how long loadgen gives a target (or the payment provider)
// that does not answer yet before it declares it unreachable: an instance
// started a moment ago is still connecting to its backends, and a script
// that starts the servers and then loadgen should not have to poll first.
const startupWait = 5 * time.Second

// retryStartup calls try until it succeeds or wait is over, sleeping 100
// ms, 200 ms, 400 ms, ... (at most 1 s) between tries, and returns the last
// error. It gives up at once when ctx ends.
func retryStartup(ctx context.Context, wait time.Duration, try func(context.Context) error) error {
	deadline := time.Now().Add(wait)
	pause := 100 * time.Millisecond
	for {
		err := try(ctx)
		if err == nil || ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return err
		}
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return err
		}
		pause = min(2*pause, time.Second)
	}
}

// createScreening creates a screening and returns it as the server stored
// it, defaults filled in.
func (c *client) createScreening(ctx context.Context, target string, req createScreening) (*screening, error) {
	var s screening
	if err := c.do(ctx, http.MethodPost, target+"/v1/screenings", req, http.StatusCreated, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// screening reads one screening.
func (c *client) screening(ctx context.Context, target, id string) (*screening, error) {
	var s screening
	if err := c.do(ctx, http.MethodGet, target+"/v1/screenings/"+id, nil, http.StatusOK, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// seats reads the seat map of a screening.
func (c *client) seats(ctx context.Context, target, id string) ([]seatState, error) {
	var body struct {
		Seats []seatState `json:"seats"`
	}
	if err := c.do(ctx, http.MethodGet, target+"/v1/screenings/"+id+"/seats", nil, http.StatusOK, &body); err != nil {
		return nil, err
	}
	return body.Seats, nil
}

// booking reads one booking.
func (c *client) booking(ctx context.Context, target, id string) (*booking, error) {
	var b booking
	if err := c.do(ctx, http.MethodGet, target+"/v1/bookings/"+id, nil, http.StatusOK, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// answer is what came back from one booking request. status is 0 when no
// HTTP answer arrived (err says why).
type answer struct {
	status  int
	code    string   // the error code of a non-201 answer
	booking booking  // the booking of a 201 answer
	taken   []string // with 409 seat_taken: the seats the server says were taken
	err     error
}

// book sends POST /v1/screenings/{id}/bookings. It never fails: whatever
// happened is in the answer, because every outcome has to be counted.
func (c *client) book(ctx context.Context, target, screeningID string, seats []string, customer string) answer {
	body := struct {
		Seats    []string `json:"seats"`
		Customer string   `json:"customer"`
	}{seats, customer}
	var b booking
	a := c.post(ctx, target+"/v1/screenings/"+screeningID+"/bookings", body, "", &b)
	if a.status == http.StatusCreated && b.ID == "" {
		return answer{err: errors.New("201 without a booking id")}
	}
	a.booking = b
	return a
}

// do sends one JSON request, checks the status and decodes the answer.
func (c *client) do(ctx context.Context, method, url string, in any, want int, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.adminToken != "" && method == http.MethodPost {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		se := &statusError{status: resp.StatusCode}
		var e apiError
		if json.Unmarshal(data, &e) == nil {
			se.code, se.message = e.Error.Code, e.Error.Message
		}
		return se
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: unreadable answer: %w", method, url, err)
	}
	return nil
}

// isStatus reports whether err is an answer with the given HTTP status.
func isStatus(err error, status int) bool {
	var se *statusError
	return errors.As(err, &se) && se.status == status
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
