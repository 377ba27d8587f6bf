// Package migrations holds seatlock's SQL schema as numbered migration
// files, embedded in the binary so that the API can bring its database up to
// date at start-up without any file next to it.
//
// Each file is named NNNN_what.sql: NNNN is its version, a positive number
// that orders the files and is recorded once the file has been applied. A
// migration, once released, is never edited: a change to the schema is a new
// file with the next number. Package reservation/postgres applies them (see
// postgres.Migrate), each file in its own transaction.
package migrations

import "embed"

// FS holds the migration files, *.sql at its root.
//
//go:embed *.sql
var FS embed.FS
