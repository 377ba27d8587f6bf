package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// watcherConnectTimeout bounds how long opening every stream and reading
// its snapshot may take before the run starts.
const watcherConnectTimeout = 30 * time.Second

// watcherGrace is how long the streams stay open after the last answer,
// for the events of the last bookings, which the server sends after
// answering.
const watcherGrace = 500 * time.Millisecond

// watchers are open seat-map pages, simulated: each is one Server-Sent
// Events stream on GET /v1/screenings/{id}/events that is read to the end
// and whose events are counted. They are goroutines of this process, not
// browsers or curl processes, so that a measurement of what open pages
// cost the server is not a measurement of the pages' own CPU.
//
// startWatchers starts them and returns once every stream has sent its
// snapshot; stop ends them and waits for every goroutine.
type watchers struct {
	cancel    context.CancelFunc
	wg        sync.WaitGroup // one per stream goroutine
	transport *http.Transport

	events atomic.Int64 // booked and cancelled events received, by all streams
	cut    atomic.Int64 // streams that ended before stop: the server closed them
}

// startWatchers opens n streams, spread round-robin over targets and
// screenings, and waits until each has received its snapshot. If one
// cannot be opened, it stops the others and returns the error.
func startWatchers(ctx context.Context, n int, targets, screenings []string) (*watchers, error) {
	// A transport of their own: the streams hold their connections for the
	// whole run, and must not take them from the clients' pool.
	w := &watchers{transport: &http.Transport{
		MaxIdleConnsPerHost: n,
		DisableCompression:  true,
	}}
	sctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	hc := &http.Client{Transport: w.transport} // no timeout: a stream lasts the run

	ready := make(chan error, n) // one send per stream, never blocks
	for i := range n {
		url := fmt.Sprintf("%s/v1/screenings/%s/events", targets[i%len(targets)], screenings[i%len(screenings)])
		w.wg.Go(func() { w.watch(sctx, hc, url, ready) })
	}
	timeout := time.NewTimer(watcherConnectTimeout)
	defer timeout.Stop()
	for range n {
		var err error
		select {
		case err = <-ready:
		case <-timeout.C:
			err = fmt.Errorf("the event streams were not all open after %v", watcherConnectTimeout)
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			w.stop()
			return nil, fmt.Errorf("opening %d event streams: %w", n, err)
		}
	}
	return w, nil
}

// watch reads one stream until ctx ends or the server closes it. It sends
// exactly one value on ready: nil once the snapshot came, or why it did
// not.
func (w *watchers) watch(ctx context.Context, hc *http.Client, url string, ready chan<- error) {
	signalled := false
	signal := func(err error) {
		if !signalled {
			signalled = true
			ready <- err
		}
	}
	defer func() { signal(errors.New("stream ended before its snapshot")) }()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		signal(err)
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		signal(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		signal(fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode))
		return
	}

	// Only the "event:" lines are looked at; the snapshot's data line is
	// long (a whole seat map), so the reader is sized for lines of any
	// length by ReadSlice's fallback below.
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: never an event name.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				w.cut.Add(1)
			}
			return
		}
		name, ok := bytes.CutPrefix(line, []byte("event: "))
		switch {
		case !ok:
		case bytes.HasPrefix(name, []byte("snapshot")):
			signal(nil)
		case bytes.HasPrefix(name, []byte("booked")), bytes.HasPrefix(name, []byte("cancelled")):
			// Only bookings count: the critical-section events (entered,
			// left) come and go with every request, booked or not.
			w.events.Add(1)
		}
	}
}

// stop closes every stream and waits for its goroutine. It returns the
// events received and the streams the server had cut before.
func (w *watchers) stop() (events, cut int64) {
	w.cancel()
	w.wg.Wait()
	w.transport.CloseIdleConnections()
	return w.events.Load(), w.cut.Load()
}
