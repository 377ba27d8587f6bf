package keyedlock_test

import (
	"testing"

	"github.com/seatlock/seatlock/docs/workshop/write/grade"
	"github.com/seatlock/seatlock/docs/workshop/write/solutions/keyedlock"
	"github.com/seatlock/seatlock/keyedlock/keyedlocktest"
)

func TestGrade(t *testing.T) {
	grade.KeyedLock(t, func() keyedlocktest.Mutex { return new(keyedlock.Mutex) })
}
