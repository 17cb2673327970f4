-- The engine events of each update, for `plinth logs`, as the file backend logs them (no
-- values), in the numbered batches its client sent. An update's phases (a refresh, then the
-- update) each keep their own log: `phase` counts the versions the update had made when the
-- batch came, plus one, so the log of a version is found from the version alone.
CREATE TABLE event_batches (
    update_id UUID NOT NULL REFERENCES updates (id) ON DELETE CASCADE,
    phase INT NOT NULL CHECK (phase >= 1),
    seq BIGINT NOT NULL CHECK (seq >= 1),
    digest BYTEA NOT NULL,
    events JSONB NOT NULL,
    PRIMARY KEY (update_id, phase, seq)
);
