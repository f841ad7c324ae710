-- A revoked token's long-polls end when the revocation commits, on every
-- replica: each replica's LISTEN connection hears `token_revoked` with the
-- token's id (registry/store/listen.py) and answers that token's waiting
-- requests 401. A trigger rather than the application's revoke function, so
-- that any path that revokes (the CLI on the embedded database, SQL by hand)
-- notifies.

CREATE FUNCTION registry_notify_token_revoked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('token_revoked', NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_notify_revoked AFTER UPDATE OF revoked_at ON tokens
    FOR EACH ROW
    WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
    EXECUTE FUNCTION registry_notify_token_revoked();
