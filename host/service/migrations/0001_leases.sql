-- Users and their access tokens (stored as SHA-256 digests: a token is shown once, at creation).
CREATE TABLE users (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tokens (
    digest BYTEA PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE stacks (
    id BIGSERIAL PRIMARY KEY,
    project TEXT NOT NULL,
    name TEXT NOT NULL,
    created TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (project, name)
);

-- Each update of a stack. Its lease token (a digest, like access tokens) is what lets its
-- client act on it; the lease expires unless renewed.
CREATE TABLE updates (
    id UUID PRIMARY KEY,
    stack_id BIGINT NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled', 'expired')),
    lease_digest BYTEA NOT NULL,
    lease_expires TIMESTAMPTZ NOT NULL,
    started TIMESTAMPTZ NOT NULL DEFAULT now(),
    ended TIMESTAMPTZ
);

-- One running update per stack, enforced by the database itself: two replicas that begin an
-- update of one stack at the same moment cannot both succeed.
CREATE UNIQUE INDEX one_running_update_per_stack ON updates (stack_id) WHERE status = 'running';
