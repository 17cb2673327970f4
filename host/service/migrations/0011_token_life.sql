-- A token's life: when it expires (never, if NULL), when it was revoked (the row is kept, so that
-- `plinth serve token list` shows it as revoked), and when it was last used (written at most once
-- a minute per token, not on every request).
ALTER TABLE tokens
    ADD COLUMN expires TIMESTAMPTZ,
    ADD COLUMN revoked TIMESTAMPTZ,
    ADD COLUMN last_used TIMESTAMPTZ;

-- The tokens a request may carry: neither revoked nor expired. Every check of a request's token
-- reads this, never `tokens`.
CREATE VIEW live_tokens AS
    SELECT * FROM tokens WHERE revoked IS NULL AND (expires IS NULL OR expires > now());
