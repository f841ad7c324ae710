-- Console sign-in sessions (issue 24): the browser's cookie holds an opaque,
-- random session id, never the bearer token. The database keeps the SHA-256
-- of that id and the hash of the token it was signed in with (as `tokens`
-- keeps it), so a revoked token ends its sessions at their next request.
CREATE TABLE console_sessions (
    id          text PRIMARY KEY CHECK (id ~ '^sha256:[0-9a-f]{64}$'),
    token_hash  text NOT NULL CHECK (token_hash ~ '^sha256:[0-9a-f]{64}$'),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at  timestamptz NOT NULL
);

CREATE INDEX console_sessions_expires_at ON console_sessions (expires_at);
