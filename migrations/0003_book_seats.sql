-- book_seats writes a confirmed booking and gives it its seats, all or
-- nothing, in one statement: the whole of Store.Book in one round trip.
-- Called on its own, it is one implicit transaction (its own commit); inside
-- a transaction (the postgres-xact strategy's), it is part of that one.
--
-- The seats' upsert is the write guard. Each seat row is created if the seat
-- was never written, else updated only if the seat is free (no booking, no
-- live hold) and the write's fence (when not 0) is newer than the seat's;
-- p_blind (guard=off) drops that condition: the last writer wins. The seats
-- are written in sorted order, so that two bookings sharing seats wait for
-- each other's row locks in one order and cannot deadlock.
--
-- When the guard refuses a seat, the function raises an error, which undoes
-- everything the statement wrote: the booking's row and the seats it did
-- get. The error says why, and the store turns it into the domain's error:
--   SLTKN  some seats are booked; DETAIL lists them, comma-separated, in the
--          order of p_seats
--   SLHLD  none is booked but some are held by a live hold; DETAIL lists them
--   SLSTL  the refused seats are free: they have seen a newer fence
-- The upsert has locked every row it touched, written or not, so the reads
-- after it see exactly what the guard saw. now() is the transaction's start,
-- before the guard looked, so a hold live for the guard is reported held
-- even if it expired since.
CREATE FUNCTION book_seats(
    p_booking uuid, p_screening text, p_customer text, p_seats text[], p_fences bigint[],
    p_token_hash bytea, p_created_at timestamptz,
    p_idem_key_hash bytea, p_idem_request_hash bytea, p_idem_sealed_token bytea, p_idem_created_at timestamptz,
    p_blind boolean
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
    taken   text[];
    held    text[];
BEGIN
    INSERT INTO bookings (id, screening_id, customer, seats, status, token_hash, created_at,
                          idem_key_hash, idem_request_hash, idem_sealed_token, idem_created_at)
    VALUES (p_booking, p_screening, p_customer, p_seats, 'confirmed', p_token_hash, p_created_at,
            p_idem_key_hash, p_idem_request_hash, p_idem_sealed_token, p_idem_created_at);

    INSERT INTO seats AS s (screening_id, seat, booking_id, fence)
    SELECT p_screening, w.seat, p_booking, w.fence
    FROM unnest(p_seats, p_fences) AS w (seat, fence)
    ORDER BY w.seat
    ON CONFLICT (screening_id, seat) DO UPDATE
        SET booking_id = excluded.booking_id,
            fence = GREATEST(s.fence, excluded.fence),
            hold_id = NULL, hold_expires_at = NULL
        WHERE p_blind
           OR (s.booking_id IS NULL
               AND (s.hold_id IS NULL OR s.hold_expires_at <= clock_timestamp())
               AND (excluded.fence = 0 OR s.fence < excluded.fence));
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written = cardinality(p_seats) THEN
        RETURN;
    END IF;

    -- The rows this booking wrote carry its id; every other row was refused.
    SELECT array_agg(a.seat ORDER BY a.n) FILTER (WHERE s.booking_id IS NOT NULL),
           array_agg(a.seat ORDER BY a.n) FILTER (WHERE s.hold_id IS NOT NULL AND s.hold_expires_at > now())
    INTO taken, held
    FROM unnest(p_seats) WITH ORDINALITY AS a (seat, n)
    JOIN seats s ON s.screening_id = p_screening AND s.seat = a.seat
    WHERE s.booking_id IS DISTINCT FROM p_booking;
    IF taken IS NOT NULL THEN
        RAISE EXCEPTION 'seats are booked: %', array_to_string(taken, ', ')
            USING ERRCODE = 'SLTKN', DETAIL = array_to_string(taken, ',');
    END IF;
    IF held IS NOT NULL THEN
        RAISE EXCEPTION 'seats are held: %', array_to_string(held, ', ')
            USING ERRCODE = 'SLHLD', DETAIL = array_to_string(held, ',');
    END IF;
    RAISE EXCEPTION 'a seat has seen a newer fence' USING ERRCODE = 'SLSTL';
END
$$;
