-- The web console's sessions: one per sign-in, kept as the SHA-256 digest of its random id (the
-- cookie holds the id; a copy of this table opens no session). A session acts with the token it
-- was opened with, checked on every request, so a revoked or expired token ends its sessions;
-- removing the token removes them.
CREATE TABLE console_sessions (
    digest BYTEA PRIMARY KEY,
    token_digest BYTEA NOT NULL REFERENCES tokens (digest) ON DELETE CASCADE,
    created TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires TIMESTAMPTZ NOT NULL
);
CREATE INDEX console_sessions_token ON console_sessions (token_digest);
CREATE INDEX console_sessions_expires ON console_sessions (expires);
