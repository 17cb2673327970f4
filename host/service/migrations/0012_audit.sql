-- A token level below `read`: sees stacks, history, logs and exports (secrets left sealed), but
-- opens no secret (dashboards, audits).
ALTER TABLE tokens DROP CONSTRAINT tokens_level_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_level_check
    CHECK (level IN ('read-no-secrets', 'read', 'write', 'admin'));

-- The audit log: one row per change made through the API or an admin command, written in the
-- transaction of the change itself, so that no change goes unrecorded. Names are kept as text,
-- not as references: a row outlives the stack, user or token it names. Nothing here is a secret
-- or a body; every column is bounded.
CREATE TABLE audit (
    id BIGSERIAL PRIMARY KEY,
    at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    action TEXT NOT NULL CHECK (length(action) BETWEEN 1 AND 40),
    -- The user the request's token belongs to; for an admin command, the database role it ran as.
    user_name TEXT NOT NULL CHECK (length(user_name) <= 200),
    -- The id (12 hex digits of its digest) of the token the request carried; none from the CLI.
    token_id TEXT CHECK (token_id ~ '^[0-9a-f]{12}$'),
    -- The peer address (the forwarded one with --trust-forwarded-for), or `cli`.
    source TEXT NOT NULL CHECK (length(source) BETWEEN 1 AND 100),
    project TEXT CHECK (length(project) <= 200),
    stack TEXT CHECK (length(stack) <= 200),
    detail TEXT NOT NULL DEFAULT '' CHECK (length(detail) <= 500)
);
CREATE INDEX audit_at ON audit (at);
CREATE INDEX audit_stack ON audit (project, stack, id);
CREATE INDEX audit_user ON audit (user_name, id);
