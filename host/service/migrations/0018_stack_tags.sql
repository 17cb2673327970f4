-- A stack's tags: `name: value` labels, shown by `plinth stack ls`. Checked by the service before
-- they are stored; the constraints hold whatever writes them.
CREATE TABLE stack_tags (
    stack_id BIGINT NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    name TEXT NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,39}$'),
    value TEXT NOT NULL CHECK (char_length(value) <= 256),
    PRIMARY KEY (stack_id, name)
);
