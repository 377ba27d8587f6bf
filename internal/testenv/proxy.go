package testenv

import (
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// StartProxy starts a toxiproxy proxy, in the test process, on a free
// loopback port in front of upstream (host:port), and stops it when t
// ends. Its Listen is the address to dial instead of upstream. Stop cuts
// the link (open connections are closed, new ones refused), Start heals
// it on the same address, and toxics make it slow or lossy.
func StartProxy(t testing.TB, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("start proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return p
}
