package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/seatlock/seatlock/payment"
)

// runPayments is `loadgen payments`: it serves an in-memory payment
// provider (package payment) until ctx ends. Point the API instances at it
// with PAYMENT_URL, and loadgen at it with -payments, to count what the
// locks protect: overlapping charges for one seat, and refunds.
func runPayments(ctx context.Context, args []string, stderr io.Writer) error {
	fs, addr := serverFlags("loadgen payments", "127.0.0.1:9100")
	check := fs.Bool("check-fences", false, "refuse a charge whose fencing token is older than the newest seen for its seat (409 stale_fence)")
	if err := parseArgs(fs, args, stderr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usagef("payments: %v", err)
	}
	provider := payment.NewProvider(payment.ProviderOptions{CheckFences: *check})
	srv := &http.Server{Handler: provider.Handler(), ReadHeaderTimeout: 5 * time.Second}
	fences := "off"
	if *check {
		fences = "on"
	}
	fmt.Fprintf(stderr, "payments: provider on http://%s (fence checking %s); stats at /v1/stats\n", ln.Addr(), fences)

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	<-served
	s := provider.Stats()
	fmt.Fprintf(stderr, "payments: %d charges, %d refunds, %d overlaps, %d refused stale, at most %d at once for one seat\n",
		s.Charges, s.Refunds, s.Overlaps, s.RefusedStale, s.MaxConcurrent)
	return err
}
