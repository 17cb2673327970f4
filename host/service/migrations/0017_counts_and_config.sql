-- How many resources each version holds, as `plinth stack ls` counts them (providers and the
-- stack's root aside), counted as the version is made: listing stacks (the API's and the
-- console's) no longer parses every latest checkpoint. Versions stored before have none and are
-- counted when read.
ALTER TABLE versions ADD COLUMN resources BIGINT CHECK (resources >= 0);
-- The stack's configuration keys an update ran with, as its client sent them when it began:
-- `[{"key", "secret", "value"}]`, a secret's without its value. The service never stores
-- `Plinth.<stack>.yaml`; the console shows the latest update's.
ALTER TABLE updates ADD COLUMN config JSONB;
-- The limits a pack the service enforces runs under (`plinth serve policy add --memory
-- --call-timeout`); the client's defaults where none.
ALTER TABLE policy_packs ADD COLUMN memory_bytes BIGINT CHECK (memory_bytes >= 1048576),
                         ADD COLUMN call_timeout_ms BIGINT CHECK (call_timeout_ms > 0);
