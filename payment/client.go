package payment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/seatlock/seatlock/reservation"
)

var _ reservation.Payments = (*Client)(nil)

// Client charges through a payment provider over HTTP. It is safe for
// concurrent use.
type Client struct {
	base string
	http *http.Client
	// slack is how much longer than a charge's delay the provider may take
	// before the charge is given up as unavailable.
	slack time.Duration
}

// ClientOptions configure a Client. The zero value works.
type ClientOptions struct {
	// HTTPClient sends the requests. Nil means a client of its own, with
	// enough idle connections for a busy API.
	HTTPClient *http.Client
	// Slack bounds a charge at its delay plus Slack, and a refund at Slack.
	// Zero means 5s.
	Slack time.Duration
}

// NewClient returns a Client of the provider at baseURL (for example
// http://127.0.0.1:9100). It returns an error when baseURL is not an
// absolute http or https URL.
func NewClient(baseURL string, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("payment: %q is not an http(s) URL", baseURL)
	}
	if opts.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		opts.HTTPClient = &http.Client{Transport: t}
	}
	if opts.Slack <= 0 {
		opts.Slack = 5 * time.Second
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), http: opts.HTTPClient, slack: opts.Slack}, nil
}

// ChargeRequest is the body of POST /v1/charges.
type ChargeRequest struct {
	BookingID   string           `json:"booking_id"`
	ScreeningID string           `json:"screening_id"`
	Seats       []string         `json:"seats"`
	Customer    string           `json:"customer"`
	Fences      map[string]int64 `json:"fences"`
	DelayMS     int64            `json:"delay_ms"`
}

// ChargeAnswer is the body of a 201 to POST /v1/charges.
type ChargeAnswer struct {
	ChargeID string `json:"charge_id"`
}

// Charge charges for ch under the idempotency key ch.PaymentID, sent as
// the Idempotency-Key header (none when it is empty): a repeat with the
// same id charges nothing more and answers as the first did. It returns an
// error wrapping reservation.ErrLockLost when the provider refused a stale
// fencing token, reservation.ErrPaymentVoided when the payment was voided
// before its charge completed, reservation.ErrUnavailable when the
// provider cannot be reached, answers anything else, or takes longer than
// the delay plus the slack, and the context's error when ctx ended first.
func (c *Client) Charge(ctx context.Context, ch reservation.Charge) (string, error) {
	fences := ch.Fences
	if fences == nil {
		fences = map[string]int64{}
	}
	body := ChargeRequest{
		BookingID:   ch.BookingID,
		ScreeningID: ch.ScreeningID,
		Seats:       ch.Seats,
		Customer:    ch.Customer,
		Fences:      fences,
		DelayMS:     ch.Delay.Milliseconds(),
	}
	var out ChargeAnswer
	status, e, err := c.post(ctx, "/v1/charges", ch.PaymentID, ch.Delay+c.slack, body, &out)
	code := e.Error.Code
	switch {
	case err != nil:
		return "", err
	case status == http.StatusCreated && out.ChargeID != "":
		return out.ChargeID, nil
	case status == http.StatusConflict && code == "stale_fence" && len(e.Error.Seen) > 0:
		return "", fmt.Errorf("the payment provider has seen newer fencing tokens for these seats: %w", &reservation.StaleTokenError{Seen: e.Error.Seen})
	case status == http.StatusConflict && code == "stale_fence":
		return "", fmt.Errorf("the payment provider has seen a newer lock holder of these seats: %w", reservation.ErrLockLost)
	case status == http.StatusConflict && code == "voided":
		return "", fmt.Errorf("the payment provider voided payment %s before its charge: %w", ch.PaymentID, reservation.ErrPaymentVoided)
	default:
		return "", fmt.Errorf("payment provider answered %d %s to a charge: %w", status, code, reservation.ErrUnavailable)
	}
}

// Refund settles the payment with the id paymentID: the provider gives
// back the charge made under it, or, when none has completed, voids it so
// that no charge can complete under it later. It reports true when a
// charge was given back, now or by an earlier call. Repeating it changes
// nothing. It returns an error wrapping reservation.ErrUnavailable when
// the provider cannot be reached, does not confirm the refund, or takes
// longer than the slack, and the context's error when ctx ended first.
func (c *Client) Refund(ctx context.Context, paymentID string) (bool, error) {
	var out RefundAnswer
	status, e, err := c.post(ctx, "/v1/refunds", "", c.slack, RefundRequest{IdempotencyKey: paymentID}, &out)
	code := e.Error.Code
	switch {
	case err != nil:
		return false, err
	case status == http.StatusOK && (out.Refunded || out.Voided):
		return out.Refunded, nil
	default:
		return false, fmt.Errorf("payment provider answered %d %s to the refund of payment %s: %w", status, code, paymentID, reservation.ErrUnavailable)
	}
}

// post sends body to path, with key as its Idempotency-Key when key is not
// empty, and decodes a 2xx answer into out. It returns the status and, for
// an error answer, its body. Only a failure to get an answer is an error:
// the context's error when ctx ended, else ErrUnavailable.
func (c *Client) post(ctx context.Context, path, key string, limit time.Duration, body, out any) (int, errorAnswer, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, errorAnswer{}, fmt.Errorf("payment: encoding the request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return 0, errorAnswer{}, fmt.Errorf("payment: %w: %w", reservation.ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set(keyHeader, key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, errorAnswer{}, ctx.Err()
		}
		return 0, errorAnswer{}, fmt.Errorf("payment provider unreachable: %w", errors.Join(reservation.ErrUnavailable, err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		if ctx.Err() != nil {
			return 0, errorAnswer{}, ctx.Err()
		}
		return 0, errorAnswer{}, fmt.Errorf("payment provider answer cut off: %w", errors.Join(reservation.ErrUnavailable, err))
	}
	if resp.StatusCode/100 == 2 {
		if out != nil && json.Unmarshal(raw, out) != nil {
			return 0, errorAnswer{}, fmt.Errorf("payment provider answered %d with a body that is not JSON: %w", resp.StatusCode, reservation.ErrUnavailable)
		}
		return resp.StatusCode, errorAnswer{}, nil
	}
	var e errorAnswer
	_ = json.Unmarshal(raw, &e) // a body that is not ours leaves the code empty
	return resp.StatusCode, e, nil
}

// errorAnswer is the body of every error answer of the protocol.
type errorAnswer struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
		// Seen, in a stale_fence refusal, is the newest fence the
		// provider has seen for each of the charge's seats.
		Seen map[string]int64 `json:"seen,omitempty"`
	} `json:"error"`
}
