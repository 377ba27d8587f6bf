package postgres_test

import (
	"net/url"
	"testing"

	"github.com/seatlock/seatlock/internal/testenv"
	"github.com/seatlock/seatlock/reservation/postgres"
)

// withParam returns dbURL with the query parameter key set to value.
func withParam(t *testing.T, dbURL, key, value string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// The pool is DefaultMaxConns unless the URL's pool_max_conns or
// Options.MaxConns says otherwise, in that order of precedence.
func TestPoolSize(t *testing.T) {
	base := testenv.NewDatabase(t)
	sized := withParam(t, base, "pool_max_conns", "3")

	for _, tc := range []struct {
		name string
		url  string
		opts postgres.Options
		want int32
	}{
		{"default", base, postgres.Options{}, postgres.DefaultMaxConns},
		{"URL", sized, postgres.Options{}, 3},
		{"options win", sized, postgres.Options{MaxConns: 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := postgres.Open(t.Context(), tc.url, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if got := postgres.MaxConns(store); got != tc.want {
				t.Fatalf("pool size = %d, want %d", got, tc.want)
			}
		})
	}
}
