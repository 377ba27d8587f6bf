-- The write guard, written once. Every write that gives a seat away (a
-- booking's and a hold's, both through give_seats, and a hold's
-- confirmation) lets it through only where seat_writable says so; a
-- refused write asks refuse_seats why, and raises that as its error.

-- seat_writable is the guard: may a writer whose lock carries p_fence (0 =
-- no fencing token) give the seat of row s away now? The seat must not be
-- booked, the fence must be newer than every fence the seat has seen, and
-- the seat must be free of holds by the database's clock: held by nobody
-- (or by a hold that has expired) for a new booking or hold (p_hold NULL),
-- still held by hold p_hold, live, for that hold's confirmation.
CREATE FUNCTION seat_writable(s seats, p_fence bigint, p_hold uuid) RETURNS boolean
LANGUAGE sql AS $$
    SELECT s.booking_id IS NULL
       AND (p_fence = 0 OR s.fence < p_fence)
       AND CASE WHEN p_hold IS NULL
                THEN s.hold_id IS NULL OR s.hold_expires_at <= clock_timestamp()
                ELSE s.hold_id IS NOT DISTINCT FROM p_hold AND s.hold_expires_at > clock_timestamp()
           END
$$;

-- refuse_seats raises the error of a write of p_seats by p_writer (a
-- booking's or a hold's id) that the guard refused, which undoes everything
-- the statement wrote. The error says why, and the store turns it into the
-- domain's error:
--   SLTKN  some seats are booked; DETAIL lists them, comma-separated, in the
--          order of p_seats
--   SLHLD  none is booked but some are held by a live hold; DETAIL lists them
--   SLSTL  the refused seats are free: they have seen a newer fence; DETAIL
--          is the write's free seats with the newest fence each was
--          written with, comma-separated seat=fence pairs in the order of
--          p_seats ("A1=17,A2=9"), so that the writer's lock service can
--          raise its fence counters past them (distlock's RaiseFences): a
--          lock service that lost its counters and whose clock is behind
--          the fences it issued would otherwise hand out refused tokens
--          until its clock caught up
-- The write has locked every row it touched, written or not, so what this
-- reads is exactly what the guard saw. now() is the transaction's start,
-- before the guard looked, so a hold live for the guard is reported held
-- even if it expired since.
CREATE FUNCTION refuse_seats(p_screening text, p_seats text[], p_writer uuid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    taken text[];
    held  text[];
    seen  text;
BEGIN
    SELECT array_agg(a.seat ORDER BY a.n) FILTER (WHERE s.booking_id IS NOT NULL),
           array_agg(a.seat ORDER BY a.n) FILTER (WHERE s.hold_id IS NOT NULL AND s.hold_expires_at > now()),
           string_agg(a.seat || '=' || s.fence, ',' ORDER BY a.n)
               FILTER (WHERE s.booking_id IS NULL AND (s.hold_id IS NULL OR s.hold_expires_at <= now()))
    INTO taken, held, seen
    FROM unnest(p_seats) WITH ORDINALITY AS a (seat, n)
    JOIN seats s ON s.screening_id = p_screening AND s.seat = a.seat
    WHERE s.booking_id IS DISTINCT FROM p_writer AND s.hold_id IS DISTINCT FROM p_writer;
    IF taken IS NOT NULL THEN
        RAISE EXCEPTION 'seats are booked: %', array_to_string(taken, ', ')
            USING ERRCODE = 'SLTKN', DETAIL = array_to_string(taken, ',');
    END IF;
    IF held IS NOT NULL THEN
        RAISE EXCEPTION 'seats are held: %', array_to_string(held, ', ')
            USING ERRCODE = 'SLHLD', DETAIL = array_to_string(held, ',');
    END IF;
    RAISE EXCEPTION 'a seat has seen a newer fence'
        USING ERRCODE = 'SLSTL', DETAIL = coalesce(seen, '');
END
$$;

-- give_seats is the guarded write: it gives p_seats to booking p_booking
-- or to hold p_hold (whose row the caller has just inserted), all or
-- nothing. Each seat row is created if the seat was never written, else
-- updated where the guard lets it; p_blind (guard=off) drops the guard: the
-- last writer wins. The seats are written in sorted order, so that two
-- writes sharing seats wait for each other's row locks in one order and
-- cannot deadlock. When the guard refuses a seat, refuse_seats raises the
-- error, which undoes the whole statement.
CREATE FUNCTION give_seats(
    p_screening text, p_seats text[], p_fences bigint[], p_booking uuid, p_hold uuid, p_blind boolean
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    INSERT INTO seats AS s (screening_id, seat, booking_id, fence, hold_id, hold_expires_at)
    SELECT p_screening, w.seat, p_booking, w.fence, h.id, h.expires_at
    FROM unnest(p_seats, p_fences) AS w (seat, fence)
    LEFT JOIN holds h ON h.id = p_hold
    ORDER BY w.seat
    ON CONFLICT (screening_id, seat) DO UPDATE
        SET booking_id = excluded.booking_id,
            fence = GREATEST(s.fence, excluded.fence),
            hold_id = excluded.hold_id, hold_expires_at = excluded.hold_expires_at
        WHERE p_blind OR seat_writable(s, excluded.fence, NULL);
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written < cardinality(p_seats) THEN
        PERFORM refuse_seats(p_screening, p_seats, coalesce(p_booking, p_hold));
    END IF;
END
$$;

-- book_seats (first in migration 0003, same arguments and errors) writes a
-- confirmed booking and gives it its seats through give_seats, all or
-- nothing, in one statement: the whole of Store.Book in one round trip.
-- Called on its own, it is one implicit transaction (its own commit);
-- inside a transaction (the postgres-xact strategy's), it is part of that
-- one.
CREATE OR REPLACE FUNCTION book_seats(
    p_booking uuid, p_screening text, p_customer text, p_seats text[], p_fences bigint[],
    p_token_hash bytea, p_created_at timestamptz,
    p_idem_key_hash bytea, p_idem_request_hash bytea, p_idem_sealed_token bytea, p_idem_created_at timestamptz,
    p_blind boolean
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bookings (id, screening_id, customer, seats, status, token_hash, created_at,
                          idem_key_hash, idem_request_hash, idem_sealed_token, idem_created_at)
    VALUES (p_booking, p_screening, p_customer, p_seats, 'confirmed', p_token_hash, p_created_at,
            p_idem_key_hash, p_idem_request_hash, p_idem_sealed_token, p_idem_created_at);
    PERFORM give_seats(p_screening, p_seats, p_fences, p_booking, NULL, p_blind);
END
$$;
