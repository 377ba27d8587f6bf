package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// limitWrites answers 429 rate_limited, with Retry-After, to a write beyond
// perSecond writes a second (a token bucket of burst tokens, refilled at
// that rate), and lets the others through. A perSecond of 0 or less lets
// everything through. The bucket is one for the whole server: it bounds
// what this instance asks of the database and the lock service, not what
// one client may do (limitPerClient does that, for the writes anyone may
// make that leave something behind for good).
func limitWrites(perSecond float64, burst int) gin.HandlerFunc {
	if perSecond <= 0 {
		return func(c *gin.Context) { c.Next() }
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	bucket := rate.NewLimiter(rate.Limit(perSecond), burst)
	message := "this server takes at most " + strconv.FormatFloat(perSecond, 'g', -1, 64) + " writes a second; nothing was done, try again after Retry-After seconds"
	return func(c *gin.Context) {
		now := time.Now()
		if bucket.AllowN(now, 1) {
			c.Next()
			return
		}
		refuse(c, bucket, now, perSecond, message)
	}
}

// refuse answers 429 rate_limited with message, and with Retry-After: the
// time until bucket, refilled at perSecond, holds a whole token again, in
// whole seconds as Retry-After wants, at least 1.
func refuse(c *gin.Context, bucket *rate.Limiter, now time.Time, perSecond float64, message string) {
	wait := (1 - bucket.TokensAt(now)) / perSecond
	c.Header("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait)))))
	respondCode(c, http.StatusTooManyRequests, codeRateLimited, message)
}
