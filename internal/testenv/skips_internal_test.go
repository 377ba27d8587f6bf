package testenv

import (
	"strings"
	"testing"
)

func TestSummary(t *testing.T) {
	got := summary([]string{"TestA", "TestB"}, []Need{
		{What: "ZooKeeper", Install: "apt-get install -y zookeeper"},
		{What: "Redis", Env: "TEST_REDIS_URL=redis://127.0.0.1:6379/0"},
	})
	want := `./internal/testenv: 2 integration tests skipped for want of ZooKeeper, Redis:
	TestA, TestB
	run them with: apt-get install -y zookeeper && TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test ./internal/testenv
`
	if got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

func TestWrap(t *testing.T) {
	names := strings.Fields(strings.Repeat("TestSomethingLong ", 20))
	got := wrap(names, 60)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("20 names in one line of at most 60: %q", got)
	}
	for _, l := range lines {
		if len(l) > 1+60+1 || !strings.HasPrefix(l, "\t") {
			t.Errorf("line %q: want a tab and at most 60 characters and a comma", l)
		}
	}
	if joined := strings.Join(strings.Fields(strings.ReplaceAll(got, ",", " ")), " "); joined != strings.Join(names, " ") {
		t.Errorf("wrap lost or changed names: %q", got)
	}
}
