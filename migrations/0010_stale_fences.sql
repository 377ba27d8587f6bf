-- A refusal for a stale fence says which fences the free seats have seen,
-- so that the writer's lock service can raise its fence counters past
-- them (distlock's RaiseFences). Without that, a lock service that lost
-- its counters and whose clock is behind the fences it issued before
-- would hand out refused tokens until its clock caught up.
--
-- refuse_seats is as in migration 0009, but for SLSTL, whose DETAIL is
-- now the write's free seats with the newest fence each was written with,
-- comma-separated seat=fence pairs in the order of p_seats ("A1=17,A2=9").
CREATE OR REPLACE FUNCTION refuse_seats(p_screening text, p_seats text[], p_writer uuid) RETURNS void
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
