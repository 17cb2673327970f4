-- Each version of a stack's state: its checkpoint exactly as the client sealed it (the service
-- holds no key and never sees a secret in plaintext), the update and phase that made it, and the
-- history entry the client recorded for it. Version 0 is the empty state and has no row.
CREATE TABLE versions (
    stack_id BIGINT NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    version BIGINT NOT NULL CHECK (version >= 1),
    update_id UUID REFERENCES updates (id) ON DELETE SET NULL,
    -- Phases of one update (a refresh, then the update) are numbered from 1; a retried phase
    -- is recognised by its number.
    phase INT,
    checkpoint BYTEA NOT NULL,
    entry JSONB NOT NULL,
    created TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (stack_id, version),
    UNIQUE (update_id, phase)
);

-- The journal batches of an update already folded into a version: the next phase (or a
-- takeover after a crash) folds only those after it.
ALTER TABLE updates ADD COLUMN folded_seq BIGINT NOT NULL DEFAULT 0;
