-- The booking schema: screenings, the bookings made for them, and the seats
-- that bookings hold.

CREATE TABLE screenings (
    id            text PRIMARY KEY,
    -- seq orders screenings by creation (Store.Screenings lists oldest first).
    seq           bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    movie         text NOT NULL,
    starts_at     timestamptz NOT NULL,
    row_count     integer NOT NULL CHECK (row_count > 0),
    seats_per_row integer NOT NULL CHECK (seats_per_row > 0),
    lock_strategy text NOT NULL,
    write_guard   text NOT NULL,
    payment_delay interval NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- A booking keeps the seats it was made for, even after it lost them (to a
-- cancel, or to a blind write under guard=off): the seats table says who
-- holds a seat now.
CREATE TABLE bookings (
    id           uuid PRIMARY KEY,
    screening_id text NOT NULL REFERENCES screenings (id),
    customer     text NOT NULL,
    seats        text[] NOT NULL,
    status       text NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
    -- SHA-256 of the booking's secret token; the token itself is never stored.
    token_hash   bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    -- The idempotency record, when the request carried an Idempotency-Key:
    -- the key's hash (never the key), the request's hash, and the token
    -- sealed under a key derived from the idempotency key.
    idem_key_hash     bytea,
    idem_request_hash bytea,
    idem_sealed_token bytea,
    idem_created_at   timestamptz,
    -- One booking per key and screening. NULLs are distinct, so bookings
    -- without a key never collide.
    CONSTRAINT bookings_idempotency_key UNIQUE (screening_id, idem_key_hash),
    CONSTRAINT bookings_idempotency_complete CHECK (
        (idem_key_hash IS NULL) = (idem_request_hash IS NULL)
        AND (idem_key_hash IS NULL) = (idem_sealed_token IS NULL)
    )
);

-- One row per seat that was ever written, created by the first booking of
-- the seat (an upsert), so a screening costs nothing until it sells.
-- booking_id is the booking that holds the seat, NULL when free; fence is
-- the highest fencing token ever written to the seat. A cancel clears
-- booking_id but keeps fence, so a lock holder that was overtaken can still
-- not write the seat. screening_id has no foreign key: every seat row is
-- written in the transaction of a booking whose own key checks the
-- screening, and a second check would take one more share lock on the
-- screening row, which every booking of a busy screening contends for.
CREATE TABLE seats (
    screening_id text NOT NULL,
    seat         text NOT NULL,
    booking_id   uuid REFERENCES bookings (id),
    fence        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (screening_id, seat)
);
