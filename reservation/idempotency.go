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

// newIdempotency derives what a request with the Idempotency-Key key
// repeats: its sorted seats and its customer. It returns nil for a request
// without a key.
func newIdempotency(key string, sortedSeats []string, customer string) *idempotency {
	if key == "" {
		return nil
	}
	kh := sha256.Sum256([]byte("seatlock idempotency key\x00" + key))
	rh := sha256.Sum256([]byte(strings.Join(sortedSeats, ",") + "\x00" + customer))
	return &idempotency{
		keyHash:     kh[:],
		requestHash: rh[:],
		sealKey:     sha256.Sum256([]byte("seatlock idempotency seal\x00" + key)),
	}
}

// replay decides, for every booking path, whether a request repeats one
// that booked before under its Idempotency-Key, and if so answers it with
// that booking's confirmation (ok), or ErrIdempotencyMismatch when the key
// was used with another request. It reads through r.
//
// A booking looks at three moments, and refused says which:
//   - before the lock (refused nil): a retry of a request that booked is
//     answered at once, without waiting for locks;
//   - under the lock (refused nil): a twin request, with the same key,
//     wrote while this one waited for the locks;
//   - after a refusal (refused is the check's or the write's error): a twin
//     wrote first without a lock (LockNone), with other seats (best
//     available, whose locks do not exclude each other), or with the same
//     payment after this one's lock was lost. Only the refusals a twin
//     causes are looked into: its seats taken (ErrSeatTaken), its key
//     taken (ErrConflict), or its payment booked (ErrPaymentSettled).
//
// ok is false, and err nil, when the request has no key, when refused is
// another refusal, or when the key has made no booking: the booking goes
// on, or answers refused.
func (s *Service) replay(ctx context.Context, r Reader, screeningID string, idem *idempotency, refused error) (c Confirmation, ok bool, err error) {
	if idem == nil || refused != nil && !refusedByTwin(refused) {
		return Confirmation{}, false, nil
	}
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

// refusedByTwin reports whether err is a refusal that a twin request's
// booking can cause (see replay).
func refusedByTwin(err error) bool {
	return errors.Is(err, ErrSeatTaken) || errors.Is(err, ErrConflict) || errors.Is(err, ErrPaymentSettled)
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
