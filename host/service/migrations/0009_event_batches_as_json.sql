-- Event batches are kept as the service wrote them (`json` is checked, not rebuilt into a tree as
-- `jsonb` is): an update sends hundreds of them and `plinth logs` only reads them back whole.
-- Changing the type rewrites the column, which forgets its compression: lz4 again where the
-- server has it (see 0008).
ALTER TABLE event_batches ALTER COLUMN events TYPE json USING events::json;
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE event_batches ALTER COLUMN events SET COMPRESSION lz4;
    END IF;
END
$$;
