package faults

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/seatlock/seatlock/internal/testenv"
)

// netFault is a network fault between one API instance and one backend,
// made by a toxiproxy proxy in the test process: apply starts it, and the
// returned function ends it.
type netFault struct {
	name  string
	apply func(t *testing.T, p *toxiproxy.Proxy) (heal func())
}

// addToxic returns a fault that adds one toxic (toxiproxy's JSON form) to
// the proxy and removes it to heal.
func addToxic(name, toxic string) netFault {
	return netFault{name: name, apply: func(t *testing.T, p *toxiproxy.Proxy) func() {
		w, err := p.Toxics.AddToxicJson(strings.NewReader(toxic))
		if err != nil {
			t.Fatalf("add toxic %s: %v", toxic, err)
		}
		return func() {
			if err := p.Toxics.RemoveToxic(t.Context(), w.Name); err != nil {
				t.Errorf("remove toxic %s: %v", w.Name, err)
			}
		}
	}}
}

var (
	netLatency = addToxic("latency 300ms",
		`{"name":"latency","type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":300,"jitter":100}}`)
	netSlow = addToxic("slow link 2 KB/s",
		`{"name":"slow","type":"bandwidth","stream":"downstream","toxicity":1,"attributes":{"rate":2}}`)
	// netCut stops the proxy: open connections are closed and new ones
	// refused, as when a link goes down; healing starts it again on the
	// same address.
	netCut = netFault{name: "cut", apply: func(t *testing.T, p *toxiproxy.Proxy) func() {
		p.Stop()
		return func() {
			if err := p.Start(); err != nil {
				t.Errorf("restart proxy: %v", err)
			}
		}
	}}
)

// startProxy starts a toxiproxy proxy on a free loopback port in front of
// upstream (host:port), stopped when t ends.
func startProxy(t *testing.T, name, upstream string) *toxiproxy.Proxy {
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

// viaProxy returns rawURL with its host:port replaced by the proxy's, and
// the original host:port.
func viaProxy(t *testing.T, rawURL string) (upstream string, through func(listen string) string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host, func(listen string) string {
		v := *u
		v.Host = listen
		return v.String()
	}
}

// TestNetworkFaults puts a network fault between instance A and its Redis
// or its Postgres for two seconds while A and B (B on a clean network)
// book on one screening. Safety must hold: every answer 201, 409 or 503,
// no seat confirmed twice, none lost. It logs a row per case for
// docs/reliability.md. A fast subset runs by default; SEATLOCK_FAULT_MATRIX=1
// runs every fault on both links for five strategies, each with the plain
// payment provider and the fence-checking one.
func TestNetworkFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test")
	}
	type netCase struct {
		lock, backend string
		fault         netFault
	}
	cases := []netCase{{"redis", "redis", netLatency}, {"postgres", "postgres", netCut}}
	if os.Getenv(matrixEnv) == "1" {
		cases = nil
		for _, backend := range []string{"redis", "postgres"} {
			for _, f := range []netFault{netLatency, netSlow, netCut} {
				for _, lock := range []string{"redis", "keyed+redis", "postgres", "postgres-xact", "file"} {
					cases = append(cases, netCase{lock, backend, f})
				}
			}
		}
	}
	for _, c := range cases {
		for _, prov := range providers() {
			t.Run(prov.subtest(c.lock+"/"+c.backend+" "+c.fault.name), func(t *testing.T) { runNetwork(t, c.lock, c.backend, c.fault, prov) })
		}
	}
}

func runNetwork(t *testing.T, lock, backend string, fault netFault, prov provider) {
	redisURL, databaseURL := testenv.RedisURL(t), testenv.NewDatabase(t)
	faulty := map[string]string{"redis": redisURL, "postgres": databaseURL}[backend]
	upstream, through := viaProxy(t, faulty)
	p := startProxy(t, backend, upstream)

	dir := t.TempDir() // the file strategy's: one host, shared
	pay := startPayments(t, prov)
	env := func(proxied bool) map[string]string {
		e := map[string]string{
			"REDIS_URL":    redisURL,
			"DATABASE_URL": databaseURL,
			"LOCK_TTL":     "2s",
			"LOCK_WAIT":    outageLockWait.String(),
			"LOCK_DIR":     dir,
			"PAYMENT_URL":  pay.url,
		}
		if proxied {
			e[map[string]string{"redis": "REDIS_URL", "postgres": "DATABASE_URL"}[backend]] = through(p.Listen)
		}
		return e
	}
	apis := []*instance{startAPI(t, env(true)), startAPI(t, env(false))}
	sc := createScreening(t, apis[1].url,
		fmt.Sprintf(`{"movie":"Network","rows":26,"seats_per_row":100,"payment_delay_ms":20,"lock":%q}`, lock))
	loads := []*load{startLoad(apis[0].url, sc.ID, 3), startLoad(apis[1].url, sc.ID, 3)}
	defer func() {
		for _, l := range loads {
			l.finish()
		}
	}()

	time.Sleep(time.Second)
	faultAt := time.Now()
	heal := fault.apply(t, p)
	time.Sleep(2 * time.Second)
	heal()
	healAt := time.Now()

	recovered := recoveredAfter(t, loads[:1], healAt, "the fault healed")
	time.Sleep(500 * time.Millisecond)
	perInstance := [2][]answer{loads[0].finish(), loads[1].finish()}
	answers := append(append([]answer(nil), perInstance[0]...), perInstance[1]...)
	checkStatuses(t, answers)
	shares := [2]string{}
	for i, as := range perInstance {
		during := sentIn(as, faultAt, healAt)
		n503, ok := 0, 0
		for _, a := range during {
			switch a.status {
			case http.StatusServiceUnavailable:
				n503++
			case http.StatusCreated:
				ok++
			}
		}
		shares[i] = fmt.Sprintf("%d sent, %d confirmed, %d 503 (p99 %v)", len(during), ok, n503, p99(during).Round(time.Millisecond))
	}
	v := judge(t, answers, mergeSeatMaps(t, apis, sc.ID))
	if v.confirmed == 0 {
		t.Error("nothing was booked at all")
	}
	stats := pay.checkCharges(t, v.confirmed, answers)
	t.Logf("row | %s | %s %s on A | %d answers, %d confirmed | %s | double-booked %d, lost %d | during, A: %s; B: %s | A recovered %v after healing |",
		lock, backend, fault.name, len(answers), v.confirmed, pay.cell(stats), v.double, v.lost,
		shares[0], shares[1], recovered.Sub(healAt).Round(time.Millisecond))
}
