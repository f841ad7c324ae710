-- Modes (moving between registries while both run) and replica clocks (`registry doctor`).
--
-- registry_mode: one row, the registry's mode; namespace_modes: a namespace's
-- own mode, which wins over the registry's. A mode is
--   read-write  everything as usual (the default);
--   read-only   no write to the registry's records is accepted;
--   import      the same, except `registry import` (a transaction that sets
--               `registry.importing` to `on`): the target of a move, refusing
--               publishes until the switch.
-- Writes to the records (namespaces created, tools and versions published or
-- moved through their lifecycle, converters, aliases, policies, capabilities) are
-- refused by the triggers below, whichever path they come from, with SQLSTATE
-- 25006 (read_only_sql_transaction), HINT 'registry-mode' and a DETAIL of
-- `{"mode", "scope", "namespace"}` as JSON, which the API answers as 409
-- `not-writable`. Usage counts, tokens and the audit log are not records a
-- mode freezes.
--
-- A write takes a shared transaction-level advisory lock before it reads the
-- mode, and setting a mode takes the same lock exclusively
-- (registry/store/modes.py): a mode change waits for the writes in flight to
-- commit, and no write that starts after it commits sees the old mode.
--
-- replicas: each serving replica writes its own clock and limits here every
-- few seconds (registry/api/replicas.py); `seen_at` is the database's clock at
-- that moment, so `clock - seen_at` is the replica's clock skew.
--
-- Safe while older replicas serve: new tables, and triggers, whose creation
-- holds a SHARE ROW EXCLUSIVE lock on each table for a moment (reads go on,
-- writes wait that moment); no table is rewritten or scanned.

CREATE TABLE registry_mode (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    mode        text NOT NULL DEFAULT 'read-write'
                CHECK (mode IN ('read-write', 'read-only', 'import')),
    reason      text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

INSERT INTO registry_mode (singleton) VALUES (true);

CREATE TABLE namespace_modes (
    namespace   text PRIMARY KEY REFERENCES namespaces (name),
    mode        text NOT NULL CHECK (mode IN ('read-write', 'read-only', 'import')),
    reason      text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE FUNCTION registry_require_writable() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    subject text;
    found_mode text;
    found_scope text;
BEGIN
    IF TG_TABLE_NAME = 'namespaces' THEN
        subject := NEW.name;
    ELSE
        subject := NEW.namespace;
    END IF;
    -- the key (7, 'mode' in ASCII) is the modes' own; the migrations lock another
    PERFORM pg_advisory_xact_lock_shared(7, 1836016741);
    SELECT m.mode, 'namespace' INTO found_mode, found_scope
    FROM namespace_modes m WHERE m.namespace = subject;
    IF NOT FOUND THEN
        SELECT r.mode, 'registry' INTO found_mode, found_scope FROM registry_mode r;
    END IF;
    IF found_mode IS NULL OR found_mode = 'read-write'
       OR (found_mode = 'import'
           AND coalesce(current_setting('registry.importing', true), '') = 'on') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is in % mode: this write is refused (% on %)',
        CASE WHEN found_scope = 'registry' THEN 'the registry'
             ELSE format('namespace %s', subject) END,
        found_mode, lower(TG_OP), TG_TABLE_NAME
        USING ERRCODE = '25006',
              HINT = 'registry-mode',
              DETAIL = json_build_object(
                  'mode', found_mode, 'scope', found_scope, 'namespace', subject)::text;
END
$$;

CREATE TRIGGER namespaces_require_writable BEFORE INSERT ON namespaces
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
-- tools first: a publish inserts its tool (ON CONFLICT DO NOTHING, which fires this
-- trigger too) before it classifies anything, so a refused publish is refused at once
CREATE TRIGGER tools_require_writable BEFORE INSERT ON tools
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
CREATE TRIGGER versions_require_writable BEFORE INSERT OR UPDATE ON versions
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
CREATE TRIGGER converters_require_writable BEFORE INSERT ON converters
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
CREATE TRIGGER aliases_require_writable BEFORE INSERT OR UPDATE ON aliases
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
CREATE TRIGGER capabilities_require_writable BEFORE INSERT ON capabilities
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
CREATE TRIGGER namespace_policies_require_writable BEFORE INSERT OR UPDATE ON namespace_policies
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();

CREATE TABLE replicas (
    replica     text PRIMARY KEY CHECK (length(replica) BETWEEN 1 AND 200),
    release     text NOT NULL,
    started_at  timestamptz NOT NULL,
    clock       timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    limits      jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(limits) = 'object')
);
