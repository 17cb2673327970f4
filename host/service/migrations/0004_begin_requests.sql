-- The id the client gave the request that began each update. A client whose answer to a begin
-- was lost sends the request again under the same id and gets its own update back, rather than a
-- 409 naming itself; one request begins at most one update.
ALTER TABLE updates ADD COLUMN request_id UUID;
CREATE UNIQUE INDEX one_update_per_begin_request ON updates (stack_id, request_id)
    WHERE request_id IS NOT NULL;
