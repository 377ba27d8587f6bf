package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// requireAdmin lets a request through only with "Authorization: Bearer
// <token>": 401 without one, 403 with a wrong one. An empty token lets
// every request through. The comparison is of SHA-256 digests in constant
// time, so neither the token's content nor its length leaks through timing.
func requireAdmin(token string) gin.HandlerFunc {
	if token == "" {
		return func(c *gin.Context) { c.Next() }
	}
	want := sha256.Sum256([]byte(token))
	return func(c *gin.Context) {
		got, ok := bearerToken(c.Request)
		if !ok {
			respondCode(c, http.StatusUnauthorized, codeUnauthorized, "this server needs an admin token: Authorization: Bearer <token>")
			return
		}
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			respondCode(c, http.StatusForbidden, codeForbidden, "the admin token is wrong")
			return
		}
		c.Next()
	}
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header; ok is false when there is no such header or no token in it.
func bearerToken(r *http.Request) (token string, ok bool) {
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
