-- What a token is for ("alice's laptop", "CI of repo X"), so that `plinth serve token list` shows
-- which one to revoke.
ALTER TABLE tokens ADD COLUMN description TEXT NOT NULL DEFAULT '';
