package faults

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/z-division/go-zookeeper/zk"

	"github.com/seatlock/seatlock/internal/testenv"
)

// netFault is a network fault between one API instance and one backend,
// made by a toxiproxy proxy in the test process: apply starts it, and the
// returned function ends it. It lasts span, 2 s when zero.
type netFault struct {
	name  string
	apply func(t *testing.T, p *toxiproxy.Proxy) (heal func())
	span  time.Duration
}

// lasting returns the fault held for d.
func (f netFault) lasting(d time.Duration) netFault {
	f.name, f.span = fmt.Sprintf("%s for %v", f.name, d), d
	return f
}

// netLink is the link of instance A that a fault hits: the first n
// entries of A's setting env (a URL or a host:port, or a comma-separated
// list of them) go through proxies, one each. With spare, A can do
// without those entries, and none of its answers may be 503.
type netLink struct {
	name  string
	env   string
	n     int
	spare bool
}

var (
	linkRedis     = netLink{"redis", "REDIS_URL", 1, false}
	linkPostgres  = netLink{"postgres", "DATABASE_URL", 1, false}
	linkZooKeeper = netLink{"zookeeper", "ZOOKEEPER_SERVERS", 1, false}
	// One of Redlock's three nodes is a minority: A still gathers a
	// majority on the other two. Two are a majority: A cannot.
	linkRedlockOne = netLink{"1 of 3 redlock nodes", "REDLOCK_URLS", 1, true}
	linkRedlockTwo = netLink{"2 of 3 redlock nodes", "REDLOCK_URLS", 2, false}
)

// netLockTTL is LOCK_TTL in runNetwork, and so the ZooKeeper session
// timeout that cmd/api asks for (zktest's server grants 0.4 s to 30 s).
const netLockTTL = 2 * time.Second

// zkCut is a cut between A and ZooKeeper twice as long as the session
// timeout: the server expires A's session and deletes its lock nodes
// while A is cut off.
var zkCut = netCut.lasting(2 * netLockTTL)

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

// viaProxy returns rawURL's host:port (or rawURL itself when it is a
// bare host:port), and a function that puts the proxy's in its place.
func viaProxy(t *testing.T, rawURL string) (upstream string, through func(listen string) string) {
	t.Helper()
	if !strings.Contains(rawURL, "://") {
		return rawURL, func(listen string) string { return listen }
	}
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

// proxyLink starts a proxy in front of each of the first link.n entries
// of env[link.env], and returns the setting with those entries going
// through their proxies, and the proxies.
func proxyLink(t *testing.T, env map[string]string, link netLink) (string, []*toxiproxy.Proxy) {
	t.Helper()
	entries := strings.Split(env[link.env], ",")
	if len(entries) < link.n {
		t.Fatalf("%s names %d servers, the fault needs %d", link.env, len(entries), link.n)
	}
	proxies := make([]*toxiproxy.Proxy, link.n)
	for i := range proxies {
		upstream, through := viaProxy(t, entries[i])
		proxies[i] = testenv.StartProxy(t, fmt.Sprintf("%s-%d", link.env, i), upstream)
		entries[i] = through(proxies[i].Listen)
	}
	return strings.Join(entries, ","), proxies
}

// TestNetworkFaults puts a network fault between instance A and its Redis,
// its Postgres or its lock service (Redlock nodes, ZooKeeper) while A and
// B (B on a clean network) book on one screening. Safety must hold: every
// answer 201, 409 or 503, no seat confirmed twice, none lost. It logs a
// row per case for docs/reliability.md. A fast subset runs by default;
// SEATLOCK_FAULT_MATRIX=1 runs every fault on both links for five
// strategies, and on the lock service's links for redlock and zookeeper,
// each with the plain payment provider and the fence-checking one.
func TestNetworkFaults(t *testing.T) {
	faultTest(t)
	type netCase struct {
		lock  string
		link  netLink
		fault netFault
	}
	cases := []netCase{{"redis", linkRedis, netLatency}, {"postgres", linkPostgres, netCut}, {"redlock", linkRedlockOne, netCut}}
	if os.Getenv(matrixEnv) == "1" {
		cases = nil
		for _, link := range []netLink{linkRedis, linkPostgres} {
			for _, f := range []netFault{netLatency, netSlow, netCut} {
				for _, lock := range []string{"redis", "keyed+redis", "postgres", "postgres-xact", "file"} {
					cases = append(cases, netCase{lock, link, f})
				}
			}
		}
		for _, link := range []netLink{linkRedlockOne, linkRedlockTwo} {
			for _, f := range []netFault{netLatency, netSlow, netCut} {
				cases = append(cases, netCase{"redlock", link, f})
			}
		}
		for _, f := range []netFault{netLatency, netSlow, netCut.lasting(time.Second), zkCut} {
			cases = append(cases, netCase{"zookeeper", linkZooKeeper, f})
		}
	}
	for _, c := range cases {
		for _, prov := range providers() {
			t.Run(prov.subtest(c.lock+"/"+c.link.name+" "+c.fault.name), func(t *testing.T) { runNetwork(t, c.lock, c.link, c.fault, prov) })
		}
	}
}

// startPair starts instances A and B of the strategy lock on the shared
// Redis, a new database and the strategy's own servers, with LOCK_TTL
// netLockTTL, charging through pay. A reaches link's servers through
// proxies, returned; B reaches them directly.
func startPair(t *testing.T, lock string, link netLink, pay *payments) (a, b *instance, proxies []*toxiproxy.Proxy) {
	t.Helper()
	env := map[string]string{
		"REDIS_URL":    testenv.RedisURL(t),
		"DATABASE_URL": testenv.NewDatabase(t),
		"LOCK_TTL":     netLockTTL.String(),
		"LOCK_WAIT":    outageLockWait.String(),
		"LOCK_DIR":     t.TempDir(), // the file strategy's: one host, shared
		"PAYMENT_URL":  pay.url,
	}
	startLockServers(t, lock, env)
	envA := maps.Clone(env)
	envA[link.env], proxies = proxyLink(t, env, link)
	return startAPI(t, envA), startAPI(t, env), proxies
}

func runNetwork(t *testing.T, lock string, link netLink, fault netFault, prov provider) {
	pay := startPayments(t, prov)
	a, b, proxies := startPair(t, lock, link, pay)
	apis := []*instance{a, b}
	sc := createScreening(t, apis[1].url,
		fmt.Sprintf(`{"movie":"Network","rows":26,"seats_per_row":100,"payment_delay_ms":20,"lock":%q}`, lock))
	loads := steadyLoads(t, apis, sc.ID)
	faultAt := time.Now()
	var heals []func()
	for _, p := range proxies {
		heals = append(heals, fault.apply(t, p))
	}
	time.Sleep(cmp.Or(fault.span, 2*time.Second)) // the fault under test, for its span
	for _, heal := range heals {
		heal()
	}
	healAt := time.Now()

	recovered := recoveredAfter(t, loads[:1], healAt, "the fault healed")
	confirmedAfter(t, loads[:1], recovered, steadyBookings/2, "A confirms bookings after the recovery")
	perInstance := [2][]answer{loads[0].finish(), loads[1].finish()}
	answers := append(append([]answer(nil), perInstance[0]...), perInstance[1]...)
	checkStatuses(t, answers)
	shares := [2]string{}
	for i, as := range perInstance {
		during := sentIn(as, faultAt, healAt)
		n503, ok, lost := 0, 0, 0
		for _, a := range during {
			switch {
			case a.status == http.StatusServiceUnavailable:
				n503++
			case a.status == http.StatusCreated:
				ok++
			case a.code == "lock_lost":
				lost++
			}
		}
		shares[i] = fmt.Sprintf("%d sent, %d confirmed, %d 503, %d lock_lost (p99 %v)", len(during), ok, n503, lost, p99(during).Round(time.Millisecond))
		if i == 0 && link.spare && n503 > 0 {
			t.Errorf("A answered %d of %d bookings 503 with only %s faulty: it should do without them", n503, len(during), link.name)
		}
	}
	// A's ZooKeeper client logs that its session expired when it
	// reconnects after the server let the session go, as it must after a
	// cut longer than the session timeout.
	session := ""
	if lock == "zookeeper" {
		expired := strings.Contains(apis[0].logs.String(), zk.ErrSessionExpired.Error())
		if fault.name == zkCut.name && !expired {
			t.Errorf("A was cut off from ZooKeeper for %v, longer than its %v session, and its session did not expire", fault.span, netLockTTL)
		}
		session = fmt.Sprintf(" A's session expired: %v |", expired)
	}
	v := judge(t, answers, mergeSeatMaps(t, apis, sc.ID))
	if v.confirmed == 0 {
		t.Error("nothing was booked at all")
	}
	stats := pay.checkCharges(t, v.confirmed, answers)
	t.Logf("row | %s | %s %s on A | %d answers, %d confirmed | %s | double-booked %d, lost %d | during, A: %s; B: %s | A recovered %v after healing |%s",
		lock, link.name, fault.name, len(answers), v.confirmed, pay.cell(stats), v.double, v.lost,
		shares[0], shares[1], recovered.Sub(healAt).Round(time.Millisecond), session)
}
