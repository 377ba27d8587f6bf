package reservation

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"
)

// idempotency holds what the service derives from an Idempotency-Key. The
// key itself is never stored: the store sees its hash, and the booking's
// token is sealed under a key derived from it.
type idempotency struct {
	keyHash     []byte
	requestHash []byte
	sealKey     [32]byte
}

func newIdempotency(key string, sortedSeats []string, customer string) *idempotency {
	kh := sha256.Sum256([]byte("seatlock idempotency key\x00" + key))
	rh := sha256.Sum256([]byte(strings.Join(sortedSeats, ",") + "\x00" + customer))
	return &idempotency{
		keyHash:     kh[:],
		requestHash: rh[:],
		sealKey:     sha256.Sum256([]byte("seatlock idempotency seal\x00" + key)),
	}
}

// replay returns the confirmation of the booking that the key made before,
// if any, reading through r. ok is false when the key is new.
func (s *Service) replay(ctx context.Context, r Reader, screeningID string, idem *idempotency) (c Confirmation, ok bool, err error) {
	rec, err := r.Idempotent(ctx, screeningID, idem.keyHash)
	if errors.Is(err, ErrNotFound) {
		return Confirmation{}, false, nil
	}
	if err != nil {
		return Confirmation{}, false, err
	}
	if !bytes.Equal(rec.RequestHash, idem.requestHash) {
		return Confirmation{}, true, &messageError{kind: ErrIdempotencyMismatch, msg: "this Idempotency-Key was used with a different request"}
	}
	b, _, err := r.Booking(ctx, rec.BookingID)
	if err != nil {
		return Confirmation{}, true, err
	}
	token, err := idem.open(rec.SealedToken, rec.BookingID)
	if err != nil {
		return Confirmation{}, true, err
	}
	return Confirmation{Booking: b, Token: token}, true, nil
}

func (i *idempotency) record(bookingID, token string, at time.Time) (IdempotencyRecord, error) {
	aead, err := i.aead()
	if err != nil {
		return IdempotencyRecord{}, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return IdempotencyRecord{}, fmt.Errorf("idempotency nonce: %w", err)
	}
	return IdempotencyRecord{
		KeyHash:     i.keyHash,
		RequestHash: i.requestHash,
		BookingID:   bookingID,
		SealedToken: aead.Seal(nonce, nonce, []byte(token), []byte(bookingID)),
		CreatedAt:   at,
	}, nil
}

func (i *idempotency) open(sealed []byte, bookingID string) (string, error) {
	aead, err := i.aead()
	if err != nil {
		return "", err
	}
	n := aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("idempotency record: sealed token too short")
	}
	plain, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(bookingID))
	if err != nil {
		return "", fmt.Errorf("idempotency record: %w", err)
	}
	return string(plain), nil
}

func (i *idempotency) aead() (cipher.AEAD, error) {
	block, err := aes.NewCipher(i.sealKey[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
