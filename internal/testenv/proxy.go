package testenv

import (
	"testing"

	"github.com/Shopify/toxiproxy/v2"

	"github.com/seatlock/seatlock/internal/cluster"
)

// StartProxy starts a toxiproxy proxy, in the test process, on a free
// loopback port in front of upstream (host:port), and stops it when t
// ends. Its Listen is the address to dial instead of upstream. Stop cuts
// the link (open connections are closed, new ones refused), Start heals
// it on the same address, and toxics make it slow or lossy.
func StartProxy(t testing.TB, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	l, err := cluster.NewLink(name, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l.Proxy()
}
