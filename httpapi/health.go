package httpapi

import (
	"context"
	_ "embed"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seatlock/seatlock/reservation"
)

// handleHealthz answers as long as the process serves HTTP: a liveness
// check that never touches a backend, so a Redis outage does not get every
// instance restarted.
func handleHealthz() gin.HandlerFunc {
	return func(c *gin.Context) {
		writeJSON(c, http.StatusOK, gin.H{"status": "ok"})
	}
}

// handleReadyz answers 200 when the store and the lock backend answer
// within timeout, else 503: a load balancer sends no bookings to an
// instance that could not serve them.
func handleReadyz(svc *reservation.Service, timeout time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
		defer cancel()
		if err := svc.Ready(ctx); err != nil {
			respondErr(c, err)
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
