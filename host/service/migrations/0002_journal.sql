-- The journal of each update, in the batches its client sent: numbered from 1 without gaps, so
-- that a retried batch is recognised (same number, same digest) and a conflicting one refused.
CREATE TABLE journal_batches (
    update_id UUID NOT NULL REFERENCES updates (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL CHECK (seq >= 1),
    digest BYTEA NOT NULL,
    entries JSONB NOT NULL,
    PRIMARY KEY (update_id, seq)
);
