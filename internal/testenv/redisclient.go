package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisClient returns a client of the Redis server at url (a redis://
// URL), closed when t ends.
func RedisClient(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("parse Redis URL: %v", err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// NextMessage returns the payload of the next message on ps, failing t
// after 10 seconds.
func NextMessage(t *testing.T, ps *redis.PubSub) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return msg.Payload
}

// AfterCommand is a go-redis hook (redis.Client.AddHook) that calls itself
// right after the client processed each command sent alone (not in a
// pipeline), with the command's error, and returns what it returns.
type AfterCommand func(ctx context.Context, cmd redis.Cmder, err error) error

// DialHook passes dials through: part of redis.Hook.
func (f AfterCommand) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook passes pipelines through: part of redis.Hook.
func (f AfterCommand) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// ProcessHook calls f after each command: part of redis.Hook.
func (f AfterCommand) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return f(ctx, cmd, next(ctx, cmd)) }
}

// ExpiresAt returns when key expires on the server behind c, by the
// server's own clock: its TIME plus the key's PTTL, read in one
// transaction. It fails t when the key is gone or never expires. A test
// that compares it with a time of its own must run the server on the same
// machine, so that both read one clock.
func ExpiresAt(t testing.TB, c redis.Cmdable, key string) time.Time {
	t.Helper()
	var now *redis.TimeCmd
	var pttl *redis.DurationCmd
	_, err := c.TxPipelined(t.Context(), func(p redis.Pipeliner) error {
		now, pttl = p.Time(t.Context()), p.PTTL(t.Context(), key)
		return nil
	})
	if err != nil {
		t.Fatalf("read the expiry of %s: %v", key, err)
	}
	if pttl.Val() < 0 {
		t.Fatalf("%s has no expiry to read: PTTL %v (-2ns: gone, -1ns: none)", key, pttl.Val())
	}
	return now.Val().Add(pttl.Val())
}
