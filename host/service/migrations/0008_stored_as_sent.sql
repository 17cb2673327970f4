-- Journal batches are kept as the client wrote them (`json` is checked, not rebuilt into a tree
-- as `jsonb` is): the service stores tens of them a second while an update runs and only reads
-- them back whole, to rebuild a version.
ALTER TABLE journal_batches ALTER COLUMN entries TYPE json USING entries::json;

-- Large values (journal and event batches, checkpoints of megabytes) are compressed with lz4,
-- several times faster than the default, where the server has it (PostgreSQL 14 and later,
-- built with lz4, as the usual packages are).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE journal_batches ALTER COLUMN entries SET COMPRESSION lz4;
        ALTER TABLE event_batches ALTER COLUMN events SET COMPRESSION lz4;
        ALTER TABLE versions ALTER COLUMN checkpoint SET COMPRESSION lz4;
    END IF;
END
$$;
