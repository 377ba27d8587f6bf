package migrations_test

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/seatlock/seatlock/migrations"
)

// TestFilesAreNumberedOnce checks the naming rule the runner relies on:
// NNNN_what.sql, every version used once, none of them empty.
func TestFilesAreNumberedOnce(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no migrations embedded")
	}
	valid := regexp.MustCompile(`^([0-9]{4})_[a-z0-9_]+\.sql$`)
	seen := map[string]string{}
	for _, name := range names {
		m := valid.FindStringSubmatch(name)
		if m == nil {
			t.Errorf("%s: want a name like 0001_schema.sql", name)
			continue
		}
		if prev, ok := seen[m[1]]; ok {
			t.Errorf("%s and %s share version %s", prev, name, m[1])
		}
		seen[m[1]] = name
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(body)) == "" {
			t.Errorf("%s is empty", name)
		}
	}
}
