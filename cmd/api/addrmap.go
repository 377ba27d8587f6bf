package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// addrMap is REDIS_ADDR_MAP: Redis addresses (host:port) to dial instead
// of others. Sentinels name the primary by the address it has on its own
// network; behind NAT, a container network or a proxy, the API reaches it
// by another, as ioredis's natMap and Jedis's HostAndPortMapper let a
// client say. It is a flag.Value: "from=to,from=to".
type addrMap map[string]string

func (m addrMap) String() string {
	pairs := make([]string, 0, len(m))
	for from, to := range m {
		pairs = append(pairs, from+"="+to)
	}
	slices.Sort(pairs)
	return strings.Join(pairs, ",")
}

// Set reads "from=to" pairs, comma-separated, each side a host:port.
func (m *addrMap) Set(s string) error {
	parsed := addrMap{}
	for _, pair := range splitList(s) {
		from, to, ok := strings.Cut(pair, "=")
		if !ok || !hostPort(from) || !hostPort(to) {
			return fmt.Errorf("%q is not a pair host:port=host:port", pair)
		}
		parsed[from] = to
	}
	*m = parsed
	return nil
}

// hostPort reports whether s is a host:port with both parts given.
func hostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	return err == nil && host != "" && port != ""
}

// dialer returns a go-redis dialer that dials the address m maps an
// address to, and the address itself when m has none; with tls set, it
// speaks TLS over the connection, as go-redis's own dialer does.
func (m addrMap) dialer(timeout time.Duration, tlsConfig *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: cmp.Or(timeout, 5*time.Second)}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, cmp.Or(m[addr], addr))
		if err != nil || tlsConfig == nil {
			return conn, err
		}
		return tls.Client(conn, tlsConfig), nil
	}
}
