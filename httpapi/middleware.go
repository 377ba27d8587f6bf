package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
)

// requestIDHeader is the header of a request's id, in the canonical form
// of net/http's header keys, so that it is read and written in the header
// maps directly, without the canonicalization (and for a spelling such as
// "X-Request-ID", an allocation) that Header.Get and Header.Set make.
const requestIDHeader = "X-Request-Id"

// observe gives every request an id (the client's X-Request-ID if it is
// sensible, else a new uuid), echoes it, and after the request logs one line
// and records the request metrics. It runs outermost, so it sees the status
// of every answer, including recovered panics and 404s.
func observe(logger *slog.Logger, m *metrics) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		var id string
		if ids := c.Request.Header[requestIDHeader]; len(ids) > 0 {
			id = ids[0]
		}
		if !validRequestID(id) {
			id = uuid.NewString()
		}
		// The id is kept in the answer's header only: recoverPanics reads
		// it there.
		c.Writer.Header()[requestIDHeader] = []string{id}
		route := c.FullPath() // the pattern; empty when no route matched
		if route == "" {
			route = "unmatched"
		}
		inFlight := m.inFlightOf.Get(route)
		inFlight.Inc()
		defer inFlight.Dec()

		c.Next()

		elapsed := time.Since(start)
		status := c.Writer.Status()
		answered := m.answered.Get(answerKey{route, methodLabel(c.Request.Method), status})
		answered.requests.Inc()
		answered.duration.Observe(elapsed.Seconds())

		attrs := []slog.Attr{
			slog.String("id", id),
			slog.String("method", c.Request.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Duration("duration", elapsed),
		}
		if route == "unmatched" {
			attrs = append(attrs, slog.String("path", clip(c.Request.URL.Path, 200)))
		}
		level := slog.LevelInfo
		if err := c.Errors.Last(); err != nil {
			attrs = append(attrs, slog.String("err", err.Error()))
			level = slog.LevelError
		}
		if c.Request.Context().Err() != nil {
			// The client went away before the answer (nginx logs 499).
			attrs = append(attrs, slog.Bool("client_gone", true))
			level = slog.LevelWarn
		}
		logRequest(c.Request.Context(), logger, level, attrs)
	}
}

// logRequest logs the line of a request. It hands the record to the
// handler itself, without the caller's program counter that
// slog.Logger.LogAttrs looks up for every line (a stack walk per
// request): the caller would always be observe, which says nothing, and
// the server's handlers do not print it.
func logRequest(ctx context.Context, logger *slog.Logger, level slog.Level, attrs []slog.Attr) {
	h := logger.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, "request", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

// validRequestID accepts a client's request id of up to 128 visible ASCII
// characters, so that a log line cannot be forged or flooded through it.
func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// methodLabel is the method as a metric label. A client may send any token
// as a method, and each label value is a new series kept for the life of
// the process, so methods other than the standard ones share one value.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// recoverPanics turns a panic in a handler into a JSON 500 without
// details, and logs the panic with its stack. No handler should panic on
// any input; this is the net under that promise, not a way to report errors.
func recoverPanics(logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				// The handler asked net/http to abort the connection.
				panic(v)
			}
			logger.Error("panic serving request",
				"id", c.Writer.Header().Get(requestIDHeader),
				"panic", v,
				"stack", string(debug.Stack()))
			if c.Writer.Written() {
				c.Abort()
				return
			}
			respondCode(c, http.StatusInternalServerError, codeInternal, msgInternal)
		}()
		c.Next()
	}
}
