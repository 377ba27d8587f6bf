package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seatlock/seatlock/migrations"
)

// migrationLockKey is the key of the Postgres advisory lock that serialises
// Migrate across instances: the ASCII bytes of "seatlock" read as one
// 64-bit number. Any process that migrates this schema must use the same key.
const migrationLockKey int64 = 0x73_65_61_74_6c_6f_63_6b // "seatlock"

// Migrate applies the migrations of package migrations that the database
// has not recorded yet, in version order, each file in its own transaction,
// and records each in the table schema_migrations.
//
// It first takes a session-level advisory lock on one connection of the
// pool and holds it to the end, so that several instances started together
// migrate one after the other: the first applies the files, the others find
// them recorded and apply nothing. It waits for the lock as long as ctx
// allows.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := migrationFiles()
	if err != nil {
		return err
	}

	// An advisory lock belongs to a session, so the lock, every migration
	// and the unlock must use one and the same connection.
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return migrateError("migrate", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
		return migrateError("migrate: take the migration lock", err)
	}
	defer func() {
		// Unlock even when ctx has ended. If that fails, close the
		// connection: ending the session is what releases the lock then.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", migrationLockKey); err != nil {
			conn.Conn().Close(ctx)
		}
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    bigint PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return migrateError("migrate: create schema_migrations", err)
	}
	rows, _ := conn.Query(ctx, "SELECT version FROM schema_migrations")
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return migrateError("migrate: read schema_migrations", err)
	}

	for _, f := range files {
		if slices.Contains(applied, f.version) {
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, f.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", f.version, f.name)
			return err
		}); err != nil {
			return migrateError("migrate: apply "+f.name, err)
		}
	}
	return nil
}

// migration is one embedded migration file.
type migration struct {
	version int64
	name    string
	sql     string
}

// migrationFiles returns the embedded migrations in version order. A file is
// named NNNN_what.sql; NNNN is its version.
func migrationFiles() ([]migration, error) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		return nil, err
	}
	var files []migration
	for _, name := range names {
		prefix, _, ok := strings.Cut(name, "_")
		version, err := strconv.ParseInt(prefix, 10, 64)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("postgres: migration %s: want a name like 0001_schema.sql", name)
		}
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			return nil, err
		}
		files = append(files, migration{version: version, name: name, sql: string(body)})
	}
	slices.SortFunc(files, func(a, b migration) int { return cmp.Compare(a.version, b.version) })
	for i := 1; i < len(files); i++ {
		if files[i].version == files[i-1].version {
			return nil, errors.New("postgres: migrations " + files[i-1].name + " and " + files[i].name + " share a version")
		}
	}
	return files, nil
}
