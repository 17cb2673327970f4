-- A version that keeps its base's state as it was (an update that changed nothing) names the
-- version holding that checkpoint instead of storing a copy: every no-op update of a stack of
-- 100,000 resources stored 50 MB more. Readers take the checkpoint from there; the version
-- named always holds one itself.
ALTER TABLE versions ALTER COLUMN checkpoint DROP NOT NULL,
    ADD COLUMN checkpoint_of BIGINT,
    ADD CONSTRAINT a_checkpoint_or_the_version_holding_it
        CHECK ((checkpoint IS NULL) <> (checkpoint_of IS NULL) AND checkpoint_of < version),
    ADD CONSTRAINT checkpoint_of_a_version_of_the_stack
        FOREIGN KEY (stack_id, checkpoint_of) REFERENCES versions (stack_id, version);
