package distlocktest

import (
	"testing"

	"github.com/seatlock/seatlock/distlock"
)

// stage is a group of the suite's tests that a lock passes before the next
// group means anything: a lock that does not exclude cannot be judged on
// how it loses a lease.
type stage struct {
	name string
	// next says what to work on when the stage fails.
	next  string
	cases []testCase
}

type testCase struct {
	name string
	run  func(*testing.T)
}

// stages lists the suite's tests in the order a lock is built: taking and
// giving back keys, then the token, then leases that run out, are lost and
// are renewed.
func (s *suite) stages() []stage {
	return []stage{
		{name: "1-basics", next: "Obtain must wait for a held key and take keys all or nothing; Release must free them and refuse a second time", cases: []testCase{
			{"MutualExclusion", s.mutualExclusion},
			{"CancelWhileWaiting", s.cancelWhileWaiting},
			{"MultiKeyAllOrNothing", s.multiKeyAllOrNothing},
		}},
		{name: "2-ownership", next: "only the holder may release or refresh a key, and each holder gets a larger fencing token", cases: []testCase{
			{"NonOwnerRefused", s.nonOwnerRefused},
			{"FencingIncreases", s.fencingIncreases},
		}},
		{name: "3-leases", next: "a lease must run out when its holder vanishes, be renewed while it lives, and close Lost when it is gone", cases: []testCase{
			{"ExpiryOfVanishedHolder", s.expiryOfVanishedHolder},
			{"LossOnDelete", s.lossOnDelete},
			{"LossOnExpiry", s.lossOnExpiry},
			{"WaitOutlastsLease", s.waitOutlastsLease},
		}},
	}
}

// RunStaged runs the same tests as Run, one stage at a time, and stops at
// the first stage that fails with a message that says what that stage
// asks of the lock. It is the grader of the workshop's write-it-yourself
// labs: feedback on one thing at a time, the basic ones first.
func RunStaged(t *testing.T, newLocker func(t *testing.T) distlock.Locker, opts Options) {
	t.Helper()
	if opts.TTL <= 0 {
		t.Fatal("distlocktest: Options.TTL must be set")
	}
	s := &suite{newLocker: newLocker, opts: opts}
	stages := s.stages()
	for i, st := range stages {
		passed := t.Run(st.name, func(t *testing.T) {
			for _, c := range st.cases {
				t.Run(c.name, c.run)
			}
		})
		if !passed {
			t.Fatalf("stage %d of %d (%s) failed: %s. The later stages run once it passes.", i+1, len(stages), st.name, st.next)
		}
		t.Logf("stage %d of %d (%s) passed", i+1, len(stages), st.name)
	}
}
