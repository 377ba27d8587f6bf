package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheckTimeout bounds the whole check: a container runtime runs it
// every few seconds and must not pile checks up.
const healthcheckTimeout = 3 * time.Second

// healthcheck asks the server this configuration would run, at its ADDR,
// for GET /healthz, and returns nil only for a 200. It is what
// "api -healthcheck" does: the container image has no shell and no curl,
// so the binary checks itself (compose.yaml's healthcheck). A listen
// address without a host, or with an unspecified one (":8080",
// "0.0.0.0:8080"), is checked on the loopback address.
func healthcheck(ctx context.Context, addr string, stdout io.Writer) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &configError{fmt.Errorf("ADDR %q is no host:port to check", addr)}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	ctx, cancel := context.WithTimeout(ctx, healthcheckTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<10))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s answered %s", url, res.Status)
	}
	fmt.Fprintf(stdout, "healthy: GET %s answered %s\n", url, res.Status)
	return nil
}
