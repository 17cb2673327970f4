-- Journal and event batches are stored as text: the service checks every journal batch entry by
-- entry when it arrives and writes every event batch itself, so PostgreSQL's own check of a
-- `json` value was a second parse of each batch, on the path every step's start waits for.
-- Readers that want JSON cast it back. Changing the type rewrites the column, which forgets its
-- compression: lz4 again where the server has it (see 0008).
ALTER TABLE journal_batches ALTER COLUMN entries TYPE text USING entries::text;
ALTER TABLE event_batches ALTER COLUMN events TYPE text USING events::text;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE journal_batches ALTER COLUMN entries SET COMPRESSION lz4;
        ALTER TABLE event_batches ALTER COLUMN events SET COMPRESSION lz4;
    END IF;
END
$$;
