-- The creates an update's journal has begun and not ended yet: a journal batch that ends a
-- create in short (`created-as-begun`) is refused when it arrives unless its `begin` came in an
-- earlier batch, so that no stored journal is one the state cannot be rebuilt from.
CREATE TABLE open_creates (
    update_id UUID NOT NULL REFERENCES updates (id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    PRIMARY KEY (update_id, seq)
);
