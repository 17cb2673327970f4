-- What a token is for ("alice's laptop", "CI of repo X"), so that `plinth serve token list` shows
-- which one to revoke, and what it may do: a level (read < write < admin, each including the
-- ones below) on every stack, on a project's stacks, or on one stack. Tokens made before this
-- keep what they could do: admin on every stack.
ALTER TABLE tokens
    ADD COLUMN description TEXT NOT NULL DEFAULT '',
    ADD COLUMN level TEXT NOT NULL DEFAULT 'admin' CHECK (level IN ('read', 'write', 'admin')),
    ADD COLUMN project TEXT,
    ADD COLUMN stack TEXT,
    ADD CONSTRAINT tokens_stack_in_a_project CHECK (stack IS NULL OR project IS NOT NULL);
