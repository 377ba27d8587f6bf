package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Link is a fault proxy (toxiproxy, in this process) on a free loopback
// port in front of a server: an API instance dials Listen instead of the
// server. Cut and Slow break it; Heal undoes both.
type Link struct {
	Name   string // "api-0 -> postgres"
	Listen string // host:port to dial

	proxy *toxiproxy.Proxy
	mu    sync.Mutex // protects cut and slow: faults and Heal may come from several goroutines
	cut   bool
	slow  string // name of the latency toxic, empty when none
}

// NewLink starts a proxy in front of upstream (host:port).
func NewLink(name, upstream string) (*Link, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("cluster: proxy to %s: %w", upstream, err)
	}
	return &Link{Name: name, Listen: p.Listen, proxy: p}, nil
}

// Cut closes the link's open connections and refuses new ones, as a
// network partition does; the port stays reserved for Heal.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.cut {
		l.proxy.Stop()
		l.cut = true
	}
}

// Slow adds latency (milliseconds, with a jitter of a third of it) to
// everything the server sends back.
func (l *Link) Slow(ms int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slow != "" {
		return nil
	}
	toxic := fmt.Sprintf(`{"name":"latency","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d,"jitter":%d}}`, ms, ms/3)
	w, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(toxic))
	if err != nil {
		return fmt.Errorf("cluster: slow %s: %w", l.Name, err)
	}
	l.slow = w.Name
	return nil
}

// Heal removes a cut and a latency.
func (l *Link) Heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slow != "" {
		if err := l.proxy.Toxics.RemoveToxic(context.Background(), l.slow); err != nil {
			return fmt.Errorf("cluster: heal %s: %w", l.Name, err)
		}
		l.slow = ""
	}
	if l.cut {
		if err := l.proxy.Start(); err != nil {
			return fmt.Errorf("cluster: heal %s: %w", l.Name, err)
		}
		l.cut = false
	}
	return nil
}

// Proxy is the toxiproxy proxy behind the link, for faults that Cut and
// Slow do not cover (its Toxics take any of toxiproxy's toxics).
func (l *Link) Proxy() *toxiproxy.Proxy { return l.proxy }

// Close stops the proxy for good.
func (l *Link) Close() { l.proxy.Stop() }
