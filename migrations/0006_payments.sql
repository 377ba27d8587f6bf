-- Payments: a charge is recorded before it is sent, so that no charge is
-- ever made that nothing remembers. The booking service writes a row as
-- 'pending' before it asks the payment provider to charge, with the row's
-- id as the provider's idempotency key; the booking's write marks it
-- 'booked' in the same transaction; anything else settles it by that key
-- (a refund of a charge that completed, or a void of one that did not).
--
-- status:
--   pending    written before the charge; the charge may be in flight, done,
--              or never sent (a crash). Due for the reconciler once
--              settle_after has passed.
--   booked     kept: its booking was written in the same transaction.
--   refunding  owed back: its booking was cancelled. Due at once.
--   refunded   a charge was given back.
--   voided     no charge completed under it, and none ever can.
CREATE TABLE payments (
    id            uuid PRIMARY KEY,
    booking_id    uuid NOT NULL,
    screening_id  text NOT NULL REFERENCES screenings (id),
    seats         text[] NOT NULL,
    customer      text NOT NULL,
    -- The seats' fencing tokens as the charge carried them, seat -> token.
    fences        jsonb NOT NULL DEFAULT '{}',
    -- The hash of the booking request's Idempotency-Key, when it had one:
    -- a retry of that request finds its pending payment and charges under
    -- the same id, which the provider answers without charging again.
    idem_key_hash bytea,
    status        text NOT NULL CHECK (status IN ('pending', 'booked', 'refunding', 'refunded', 'voided')),
    charge_id     text,
    settle_after  timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    settled_at    timestamptz
);

-- One pending payment per idempotency key and screening.
CREATE UNIQUE INDEX payments_pending_key ON payments (screening_id, idem_key_hash)
    WHERE status = 'pending' AND idem_key_hash IS NOT NULL;

-- What the reconciler looks for: payments still open, by when they are due.
CREATE INDEX payments_open ON payments (settle_after) WHERE status IN ('pending', 'refunding');

-- A cancel finds the payment of its booking.
CREATE INDEX payments_booking ON payments (booking_id);

-- book_paid is book_seats (migration 0003) for a booking that was paid for:
-- in the same statement, so the same transaction, it marks the payment
-- 'booked' with its charge id, and refuses (SQLSTATE SLPAY, nothing
-- written) when the payment is no longer pending: the reconciler, or a
-- failed attempt of the same request, has refunded or voided it. The
-- UPDATE takes the payment's row lock first, so a settle of that payment
-- that is under way finishes before the booking is decided.
CREATE FUNCTION book_paid(
    p_payment uuid, p_charge text,
    p_booking uuid, p_screening text, p_customer text, p_seats text[], p_fences bigint[],
    p_token_hash bytea, p_created_at timestamptz,
    p_idem_key_hash bytea, p_idem_request_hash bytea, p_idem_sealed_token bytea, p_idem_created_at timestamptz,
    p_blind boolean
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE payments SET status = 'booked', charge_id = p_charge, settled_at = now()
    WHERE id = p_payment AND status = 'pending' AND booking_id = p_booking;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'payment % is not pending', p_payment USING ERRCODE = 'SLPAY';
    END IF;
    PERFORM book_seats(p_booking, p_screening, p_customer, p_seats, p_fences,
                       p_token_hash, p_created_at,
                       p_idem_key_hash, p_idem_request_hash, p_idem_sealed_token, p_idem_created_at,
                       p_blind);
END
$$;
