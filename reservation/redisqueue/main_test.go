package redisqueue_test

import (
	"os"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
)

// TestMain says at the end when integration tests were skipped for want of
// a server, and how to run them.
func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
