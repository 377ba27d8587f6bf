-- The waiting room of a screening (an on-sale): how many buyers its queue
-- admits a second, and how long an admission lasts. 0 admitted a second is
-- no waiting room, which every screening made before queues existed keeps.
-- The queue itself lives in Redis, shared by every instance; only its
-- settings belong with the screening.
ALTER TABLE screenings
    ADD COLUMN queue_admit_per_s  integer  NOT NULL DEFAULT 0 CHECK (queue_admit_per_s >= 0),
    ADD COLUMN queue_admitted_for interval NOT NULL DEFAULT interval '0';
