-- book_batch writes a batch of bookings of group commit (reservation/
-- postgres's groupcommit.go) in one statement: its own implicit
-- transaction, committed by the server when the statement succeeds, as
-- book_seats alone is. It replaces a batch of statements (BEGIN, the lock
-- of the batch's seats, one try_book_seats per booking, COMMIT), each of
-- which the server bound and ran, and the API read the answer of, on its
-- own.
--
-- The bookings come as parallel arrays, one element per booking, but for
-- the seats and their fences, which are flat: booking i has the next
-- p_seat_counts[i] of them, in its order. p_seat_screenings is the
-- screening of every seat of p_seats.
--
-- First the function locks the row of every seat of the batch, in
-- (screening, seat) order, creating the rows of seats never written (free,
-- fence 0: what a seat row says after a cancel); WHERE false updates
-- nothing but still locks the row. Every writer of seats thus takes its row
-- locks in that one order, and two batches (two instances) cannot
-- deadlock on them. Seats of unknown screenings are left out, for their
-- bookings to fail alone.
--
-- Then each booking runs as book_seats (migration 0003) in a block with an
-- EXCEPTION clause, a subtransaction, as try_book_seats (migration 0004)
-- does: when book_seats raises (the guard refused a seat, the screening
-- does not exist, the id or idempotency key was used, a deadlock on an
-- idempotency key chose it), everything this booking wrote is undone and
-- nothing else, and the error comes back as the booking's row: its
-- SQLSTATE (NULL when the booking was written), detail and message, in
-- the order of the bookings. try_book_seats stays for the binaries that
-- still call it.
--
-- A batch that fails as a whole (the server refused the statement, or its
-- commit: a deferred constraint) writes nothing, as before.
CREATE FUNCTION book_batch(
    p_bookings uuid[], p_screenings text[], p_customers text[], p_seat_counts integer[],
    p_seat_screenings text[], p_seats text[], p_fences bigint[],
    p_token_hashes bytea[], p_created_ats timestamptz[],
    p_idem_key_hashes bytea[], p_idem_request_hashes bytea[], p_idem_sealed_tokens bytea[],
    p_idem_created_ats timestamptz[], p_blind boolean[]
) RETURNS TABLE (code text, detail text, message text)
LANGUAGE plpgsql AS $$
DECLARE
    first integer := 1; -- of booking i's seats in p_seats and p_fences
    last  integer;
BEGIN
    INSERT INTO seats AS s (screening_id, seat)
    SELECT DISTINCT w.screening_id, w.seat
    FROM unnest(p_seat_screenings, p_seats) AS w (screening_id, seat)
    WHERE EXISTS (SELECT FROM screenings sc WHERE sc.id = w.screening_id)
    ORDER BY w.screening_id, w.seat
    ON CONFLICT (screening_id, seat) DO UPDATE SET fence = s.fence WHERE false;

    FOR i IN 1 .. cardinality(p_bookings) LOOP
        last := first + p_seat_counts[i] - 1;
        code := NULL;
        detail := NULL;
        message := NULL;
        BEGIN
            PERFORM book_seats(p_bookings[i], p_screenings[i], p_customers[i],
                               p_seats[first:last], p_fences[first:last],
                               p_token_hashes[i], p_created_ats[i],
                               p_idem_key_hashes[i], p_idem_request_hashes[i], p_idem_sealed_tokens[i],
                               p_idem_created_ats[i], p_blind[i]);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, detail = PG_EXCEPTION_DETAIL, message = MESSAGE_TEXT;
        END;
        RETURN NEXT;
        first := last + 1;
    END LOOP;
END
$$;
