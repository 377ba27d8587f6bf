//go:build !linux

package flock

import (
	"context"
	"time"

	"github.com/seatlock/seatlock/distlock/internal/lockstate"
)

// Outside Linux there is no inotify to report releases: waiters poll.

type releaseWatch struct{}

type watchPool struct{}

func (*watchPool) get([]string) *releaseWatch { return nil }

func (*watchPool) put(*releaseWatch) {}

func (*watchPool) close() {}

func (*releaseWatch) wait(ctx context.Context, d time.Duration) error { return lockstate.Sleep(ctx, d) }
