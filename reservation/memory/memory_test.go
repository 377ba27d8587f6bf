package memory_test

import (
	"testing"

	"github.com/seatlock/seatlock/reservation"
	"github.com/seatlock/seatlock/reservation/memory"
	"github.com/seatlock/seatlock/reservation/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reservation.Store { return memory.New() })
}
