-- Holds: seats kept for a customer for a while, in the data, so that no lock
-- is held while the customer pays. A hold is live while its expires_at is
-- in the future by the database's clock (clock_timestamp()); nothing has to
-- run when it expires, and nothing is written then: an expired hold keeps
-- status 'held', and every reader treats it as gone.

-- How long a hold on the screening's seats lasts; screenings made before
-- holds existed get the API's default length.
ALTER TABLE screenings ADD COLUMN hold_ttl interval NOT NULL DEFAULT interval '10 minutes';

CREATE TABLE holds (
    id           uuid PRIMARY KEY,
    screening_id text NOT NULL REFERENCES screenings (id),
    customer     text NOT NULL,
    seats        text[] NOT NULL,
    status       text NOT NULL CHECK (status IN ('held', 'confirmed', 'released')),
    -- SHA-256 of the hold's secret token; the token itself is never stored.
    token_hash   bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    -- The booking a confirm turned the hold into.
    booking_id   uuid REFERENCES bookings (id),
    CHECK ((status = 'confirmed') = (booking_id IS NOT NULL))
);

-- A seat row says who holds the seat now: a booking (booking_id) or a hold
-- (hold_id, with a copy of its expires_at so that a write's guard decides
-- on the seat row alone, under that row's lock). Never both: a confirm
-- moves the seat from its hold to its booking in one statement.
ALTER TABLE seats
    ADD COLUMN hold_id         uuid REFERENCES holds (id),
    ADD COLUMN hold_expires_at timestamptz,
    ADD CONSTRAINT seats_hold_complete CHECK ((hold_id IS NULL) = (hold_expires_at IS NULL)),
    ADD CONSTRAINT seats_booked_or_held CHECK (booking_id IS NULL OR hold_id IS NULL);
