package httpapi

import (
	"encoding/json"
	"testing"
	"time"
)

// TestJSONTimeIsWrittenAsTime checks that a jsonTime is written exactly
// as encoding/json writes the time.Time it holds, fractions of a second
// and zones included: a booking's created_at must not change on the wire.
func TestJSONTimeIsWrittenAsTime(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 27, 4, 30, 0, 0, time.UTC),
		time.Date(2026, 11, 27, 4, 30, 1, 123456000, time.UTC),
		time.Date(2026, 11, 27, 4, 30, 1, 100, time.FixedZone("", 2*3600)),
		{},
	} {
		want, err := json.Marshal(tm)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(jsonTime(tm))
		if err != nil || string(got) != string(want) {
			t.Errorf("jsonTime(%v) = %s, %v; want %s", tm, got, err, want)
		}
	}
}
