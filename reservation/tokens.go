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
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

// tokenMatches compares a token with a stored hash in constant time.
func tokenMatches(token string, hash []byte) bool {
	h := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(h[:], hash) == 1
}
