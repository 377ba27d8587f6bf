package testenv

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// RefusingDatabaseURL returns dbURL with a role of its own that may open
// no connection at all: the server answers every connection attempt with
// SQLSTATE 53300 (too_many_connections), as a server at max_connections
// does. A role limit stands in for a full server because lowering
// max_connections would take the shared server down for everyone;
// superusers are exempt from role limits, hence a role of its own. The role
// is dropped when t ends.
func RefusingDatabaseURL(t testing.TB, dbURL string) string {
	t.Helper()
	role := "seatlock_full_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	if err := execOn(dbURL, "CREATE ROLE "+role+" LOGIN CONNECTION LIMIT 0"); err != nil {
		t.Fatalf("testenv: create role: %v", err)
	}
	t.Cleanup(func() {
		if err := execOn(dbURL, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("testenv: drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("testenv: parse %s: %v", redact(dbURL), err)
	}
	u.User = url.User(role)
	return u.String()
}
