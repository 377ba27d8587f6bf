package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// The libraries that log by themselves (go-redis, go-zookeeper) log
// through these adapters, into the server's structured log: a line of
// theirs becomes a warning with the library's name, instead of a line of
// another format on stderr. Both log only what goes wrong (a dial that
// failed, a subscription lost), which is what a warning is for.

// redisLog is go-redis's logger. go-redis has one logger for the whole
// process (redis.SetLogger), so main sets it, once: run, which tests call
// side by side, touches no process-wide state.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	libraryLine(l.logger, "go-redis", format, v)
}

// zkLog is the logger of a ZooKeeper connection (zk.WithLogger).
type zkLog struct{ logger *slog.Logger }

func (l zkLog) Printf(format string, v ...any) {
	libraryLine(l.logger, "go-zookeeper", format, v)
}

// libraryLine writes one line of a library as a warning.
func libraryLine(logger *slog.Logger, lib, format string, v []any) {
	logger.Warn(strings.TrimSpace(fmt.Sprintf(format, v...)), "lib", lib)
}
