-- A removed stack is kept, with its versions, journal, events and data key, for a retention
-- period (`plinth serve --removed-stack-retention`), then purged; until then an administrator
-- may restore it (`plinth serve stack restore`). While removed it is invisible to the API, and
-- its name may be taken by a new stack: only live stacks' names are unique.
ALTER TABLE stacks
    ADD COLUMN removed TIMESTAMPTZ,
    ADD COLUMN removed_by BIGINT REFERENCES users (id) ON DELETE SET NULL;
ALTER TABLE stacks DROP CONSTRAINT stacks_project_name_key;
CREATE UNIQUE INDEX one_live_stack_per_name ON stacks (project, name) WHERE removed IS NULL;
CREATE INDEX removed_stacks ON stacks (removed) WHERE removed IS NOT NULL;
