-- try_book_seats is book_seats (migration 0003) for a booking that shares
-- its transaction with others (group commit, reservation/postgres's
-- groupcommit.go): it reports its outcome instead of raising it.
--
-- The EXCEPTION clause makes the call a subtransaction, as a savepoint
-- would: when book_seats raises (the guard refused a seat, the screening
-- does not exist, the id or idempotency key was used), everything this
-- booking wrote is undone and nothing else, the transaction goes on, and
-- the error comes back as a row: its SQLSTATE (NULL when the booking was
-- written), detail and message. The store rebuilds the error from them, so
-- a booking refused in a batch reads exactly as one refused alone.
CREATE FUNCTION try_book_seats(
    p_booking uuid, p_screening text, p_customer text, p_seats text[], p_fences bigint[],
    p_token_hash bytea, p_created_at timestamptz,
    p_idem_key_hash bytea, p_idem_request_hash bytea, p_idem_sealed_token bytea, p_idem_created_at timestamptz,
    p_blind boolean,
    OUT code text, OUT detail text, OUT message text
)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM book_seats(p_booking, p_screening, p_customer, p_seats, p_fences, p_token_hash, p_created_at,
                       p_idem_key_hash, p_idem_request_hash, p_idem_sealed_token, p_idem_created_at, p_blind);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, message = MESSAGE_TEXT;
END
$$;
