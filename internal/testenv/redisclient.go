package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

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
