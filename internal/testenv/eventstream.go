package testenv

import (
	"bufio"
	"context"
	"net/http"
	"sync"
	"testing"
)

// EventStream opens the server-sent event stream at url and returns its
// lines as they arrive; the channel is closed when the stream ends. It
// fails t unless the answer is 200 text/event-stream. When t ends, the
// stream is closed and its reading goroutine waited for.
func EventStream(t testing.TB, url string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		res.Body.Close()
		t.Fatalf("event stream %s answered %d %s", url, res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done(): // the test has ended and reads no more
				return
			}
		}
	})
	t.Cleanup(func() { cancel(); res.Body.Close(); wg.Wait() })
	return lines
}
