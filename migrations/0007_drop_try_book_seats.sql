-- try_book_seats (migration 0004) is called by nothing: group commit writes
-- a batch with book_batch (migration 0005), which runs book_seats itself in
-- a subtransaction per booking. One guarded write has one home, so the
-- function goes. A binary that still calls it must not run on this schema.
DROP FUNCTION IF EXISTS try_book_seats(
    uuid, text, text, text[], bigint[],
    bytea, timestamptz,
    bytea, bytea, bytea, timestamptz,
    boolean
);
