package main

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// loopbackAddr reports whether addr (host:port) listens on a loopback
// address only: "localhost", 127.0.0.0/8 or ::1.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// startPprof serves Go's profiling endpoints (/debug/pprof/) on ln, on a
// mux of their own, so that they never share the API's port, middleware or
// metrics: profiling the booking path must not change it. The returned
// stop shuts the listener down and waits for its goroutine.
func startPprof(ln net.Listener, logger *slog.Logger) (stop func()) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("pprof server stopped", "err", err)
		}
	}()
	logger.Info("profiling on http://" + ln.Addr().String() + "/debug/pprof/")
	return func() {
		// A profile in progress is cut off: shutting down must not wait
		// for the seconds it asked for.
		_ = srv.Close()
		<-done
	}
}
