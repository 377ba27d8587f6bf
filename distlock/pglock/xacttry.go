package pglock

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// XactTryLock is XactLock without waiting: it tries a transaction advisory
// lock (pg_try_advisory_xact_lock) on every key inside tx, in one round
// trip, and returns the keys whose lock another session holds. An empty
// result means tx holds them all. When some are held, tx still holds the
// others (a transaction lock cannot be given back before the transaction
// ends), so the caller that wants all or nothing rolls tx back.
//
// A best-available booking uses it to skip the seats that another booking
// is taking rather than wait for them.
func XactTryLock(ctx context.Context, tx pgx.Tx, keys ...string) (held []string, err error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("pglock: XactTryLock needs at least one key")
	}
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = keyID(DefaultNamespace, k)
	}
	rows, _ := tx.Query(ctx, `
		SELECT k.key
		FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k (key, id, n)
		WHERE NOT pg_try_advisory_xact_lock(k.id)
		ORDER BY k.n`, keys, ids)
	held, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pglock: transaction try-lock %q: %w", keys, err)
	}
	return held, nil
}
