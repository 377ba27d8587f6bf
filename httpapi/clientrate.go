package httpapi

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// DefaultScreeningRate and DefaultScreeningBurst are Options.ScreeningRate
// and Options.ScreeningBurst when they are zero: one client address may
// create 100 screenings at once, then one a second. A workshop, the labs
// and loadgen create a handful per run; an anonymous client that would
// fill MaxScreenings alone takes more than a day.
const (
	DefaultScreeningRate  = 1.0
	DefaultScreeningBurst = 100
)

// maxClientBuckets bounds the token buckets limitPerClient keeps, one per
// client address: its memory stays bounded whoever sends.
const maxClientBuckets = 4096

// screeningsPerClient bounds the screenings each client address creates
// (Options.ScreeningRate), unless an admin token guards creation.
func screeningsPerClient(opts Options) gin.HandlerFunc {
	if opts.AdminToken != "" {
		return func(c *gin.Context) { c.Next() }
	}
	return limitPerClient(opts.ScreeningRate, opts.ScreeningBurst, "create a screening")
}

// limitPerClient answers 429 rate_limited, with Retry-After, to a request
// from a client address that has used up its bucket: burst requests at
// once, refilled at perSecond. A client is the address the connection
// comes from (RemoteAddr, which a client cannot choose as it can a
// header), an IPv6 one taken by its /64, which one host usually owns
// whole. A perSecond of 0 or less lets everything through.
func limitPerClient(perSecond float64, burst int, what string) gin.HandlerFunc {
	if perSecond <= 0 {
		return func(c *gin.Context) { c.Next() }
	}
	clients := newClientBuckets(rate.Limit(perSecond), burst, maxClientBuckets)
	message := "this address may " + what + " at most " + strconv.Itoa(burst) + " times at once, then " +
		strconv.FormatFloat(perSecond, 'g', 3, 64) + " a second; nothing was done, try again after Retry-After seconds"
	return func(c *gin.Context) {
		now := time.Now()
		if bucket := clients.of(clientOf(c.Request), now); !bucket.AllowN(now, 1) {
			refuse(c, bucket, now, perSecond, message)
			return
		}
		c.Next()
	}
}

// clientOf returns the client a request counts against: the address its
// connection comes from, an IPv6 address by its /64.
func clientOf(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	addr := ap.Addr().Unmap()
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

// clientBuckets holds a token bucket per client, at most size of them.
// When a new client finds it full, the buckets that are full again are
// forgotten (their clients are indistinguishable from new ones); if none
// is, the new client shares one bucket with every other client that finds
// no room, so that a flood of addresses is bounded as one client is.
type clientBuckets struct {
	perSecond rate.Limit
	burst     int
	size      int

	// mu protects buckets. Each bucket is safe for concurrent use on its
	// own; the map is what needs the mutex.
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	shared  *rate.Limiter // for the clients that found no room
}

func newClientBuckets(perSecond rate.Limit, burst, size int) *clientBuckets {
	return &clientBuckets{
		perSecond: perSecond, burst: burst, size: size,
		buckets: make(map[string]*rate.Limiter),
		shared:  rate.NewLimiter(perSecond, burst),
	}
}

// of returns client's bucket, made at now if it has none.
func (b *clientBuckets) of(client string, now time.Time) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bucket, ok := b.buckets[client]; ok {
		return bucket
	}
	if len(b.buckets) >= b.size {
		for c, bucket := range b.buckets {
			if bucket.TokensAt(now) >= float64(b.burst) {
				delete(b.buckets, c)
			}
		}
	}
	if len(b.buckets) >= b.size {
		return b.shared
	}
	bucket := rate.NewLimiter(b.perSecond, b.burst)
	b.buckets[client] = bucket
	return bucket
}

// len returns how many clients have a bucket of their own.
func (b *clientBuckets) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buckets)
}
