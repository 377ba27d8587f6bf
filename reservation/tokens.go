package reservation

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
)

// newToken returns a fresh secret token and its SHA-256 hash, which is all
// the store keeps of it.
func newToken() (token string, hash []byte, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("token: %w", err)
	}
	token = hex.EncodeToString(b[:])
	return token, tokenHash(token), nil
}

// tokenHash returns the SHA-256 hash of a token, as the stores keep it.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// tokenMatches compares a token with a stored hash in constant time.
func tokenMatches(token string, hash []byte) bool {
	return subtle.ConstantTimeCompare(tokenHash(token), hash) == 1
}
