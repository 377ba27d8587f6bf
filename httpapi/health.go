package httpapi

import (
	"context"
	_ "embed"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// handleHealthz answers as long as the process serves HTTP: a liveness
// check that never touches a backend, so a Redis outage does not get every
// instance restarted.
func handleHealthz() gin.HandlerFunc {
	return func(c *gin.Context) {
		writeJSON(c, http.StatusOK, gin.H{"status": "ok"})
	}
}

// handleReadyz answers 200 when ready (the backends) answers within
// timeout, else 503 naming the backend that does not, when the error
// names one (see Options.Ready): a load balancer sends no bookings to an
// instance that could not serve them, and its operator reads which
// backend to look at. The cause goes to the request's log line.
func handleReadyz(ready func(context.Context) error, timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
		defer cancel()
		if err := ready(ctx); err != nil {
			_ = c.Error(err)
			msg := "not ready: a backend does not answer"
			var named interface{ Backend() string }
			if errors.As(err, &named) {
				msg = "not ready: " + named.Backend() + " does not answer"
			}
			respondCode(c, http.StatusServiceUnavailable, codeUnavailable, msg)
			return
		}
		writeJSON(c, http.StatusOK, gin.H{"status": "ready"})
	}
}

// handleMetrics serves reg in the Prometheus text format.
func handleMetrics(reg *prometheus.Registry) gin.HandlerFunc {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return gin.WrapH(h)
}

//go:embed index.html
var indexHTML []byte

// handleIndex serves the live seat map page: plain HTML and a little
// script that follows a screening's event stream and books through the
// JSON API, so it needs nothing but this binary.
func handleIndex() gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "text/html; charset=utf-8", indexHTML)
	}
}

// handleNoRoute answers a path that no route matches.
func handleNoRoute() gin.HandlerFunc {
	return func(c *gin.Context) {
		respondCode(c, http.StatusNotFound, codeNotFound, "no such route")
	}
}

// handleNoMethod answers a known path with a method it does not take.
func handleNoMethod() gin.HandlerFunc {
	return func(c *gin.Context) {
		respondCode(c, http.StatusMethodNotAllowed, codeMethodNotAllowed, "this method is not allowed on this route")
	}
}
