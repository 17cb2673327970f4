-- Service-managed secrets. Each stack's data key is stored only sealed by the service's master
-- key (XChaCha20-Poly1305, bound to the stack's id), so neither the database nor a dump of it
-- holds a key or a secret in plaintext.
CREATE TABLE stack_keys (
    stack_id BIGINT PRIMARY KEY REFERENCES stacks (id) ON DELETE CASCADE,
    sealed_key BYTEA NOT NULL,
    created TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- A value sealed by the master key the first service to run with one used: a service started
-- with another key is refused at once, before it seals anything the others could not open.
CREATE TABLE master_key_check (
    id BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    sealed BYTEA NOT NULL,
    created TIMESTAMPTZ NOT NULL DEFAULT now()
);
