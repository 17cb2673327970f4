-- Policy packs the service enforces (`plinth serve policy add`): a pack's component, its digest
-- (SHA-256, hex) and the stacks it applies to, a glob on PROJECT/STACK. Every update of a
-- matching stack is told to run it; the update records the packs it was told to run, and its
-- history entry the packs the client says ran.
CREATE TABLE policy_packs (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    version TEXT NOT NULL DEFAULT '' CHECK (length(version) <= 100),
    digest TEXT NOT NULL CHECK (digest ~ '^[0-9a-f]{64}$'),
    stacks TEXT NOT NULL CHECK (length(stacks) BETWEEN 1 AND 200),
    -- The configuration of its policies, in `--policy-pack-config`'s format; it wins over the
    -- client's.
    config JSONB,
    bytes BYTEA NOT NULL,
    added TIMESTAMPTZ NOT NULL DEFAULT now(),
    added_by TEXT NOT NULL DEFAULT session_user,
    UNIQUE (name, stacks)
);
-- The packs an update was told to run, as it began: `[{"name", "digest"}]`.
ALTER TABLE updates ADD COLUMN policy_packs JSONB;
