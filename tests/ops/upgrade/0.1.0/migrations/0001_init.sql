-- The registry's schema: namespaces, tools and their immutable versions,
-- converters, aliases, captured capabilities, API tokens and the audit log.
--
-- Immutability is enforced here, not only in the application: triggers refuse
-- any change to a stored version other than a forward state move (and a
-- sunset on a deprecated version), any DELETE or TRUNCATE of versions,
-- converters, capabilities and audit events, and any change to a token other
-- than revoking it.
--
-- Errors raised by the triggers carry their own SQLSTATEs:
--   RG001  the row is immutable
--   RG002  the state change is not allowed (states only move forward)

CREATE TYPE version_state AS ENUM ('active', 'deprecated', 'retired');

CREATE TABLE namespaces (
    name        text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE tools (
    namespace   text NOT NULL REFERENCES namespaces (name),
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,128}$'),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, name)
);

CREATE TABLE versions (
    namespace   text NOT NULL,
    tool        text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    digest      text NOT NULL CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    definition  jsonb NOT NULL
                CHECK (jsonb_typeof(definition) = 'object' AND definition ->> 'name' = tool),
    state       version_state NOT NULL DEFAULT 'active',
    -- Only a deprecated (or later retired) version has a sunset; once it has
    -- passed, the version reads as retired (see versions_effective).
    sunset      timestamptz,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, tool, version),
    UNIQUE (namespace, tool, digest),
    FOREIGN KEY (namespace, tool) REFERENCES tools (namespace, name),
    CHECK (state <> 'active' OR sunset IS NULL)
);

CREATE INDEX versions_by_digest ON versions (digest);

-- Every read of a state goes through this view: a deprecated version whose
-- sunset has passed is retired, with no background job to flip it.
CREATE VIEW versions_effective AS
SELECT namespace,
       tool,
       version,
       digest,
       definition,
       CASE WHEN state = 'deprecated' AND sunset <= now()
            THEN 'retired'::version_state
            ELSE state
       END AS state,
       state AS stored_state,
       sunset,
       created_at
FROM versions;

CREATE TABLE converters (
    namespace     text NOT NULL,
    tool          text NOT NULL,
    from_version  integer NOT NULL,
    to_version    integer NOT NULL,
    ops           jsonb NOT NULL CHECK (jsonb_typeof(ops) = 'array'),
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, tool, from_version, to_version),
    FOREIGN KEY (namespace, tool, from_version) REFERENCES versions (namespace, tool, version),
    FOREIGN KEY (namespace, tool, to_version) REFERENCES versions (namespace, tool, version),
    CHECK (from_version <> to_version)
);

-- An alias is re-pointed by UPDATE; each change is in the audit log with the
-- previous target and contract.
CREATE TABLE aliases (
    namespace         text NOT NULL REFERENCES namespaces (name),
    name              text NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,128}$'),
    target_tool       text NOT NULL,
    contract_tool     text NOT NULL,
    contract_version  integer NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, name),
    FOREIGN KEY (namespace, target_tool) REFERENCES tools (namespace, name),
    FOREIGN KEY (namespace, contract_tool, contract_version)
        REFERENCES versions (namespace, tool, version)
);

CREATE TABLE capabilities (
    namespace   text NOT NULL REFERENCES namespaces (name),
    seq         integer NOT NULL CHECK (seq >= 1),
    document    jsonb NOT NULL CHECK (jsonb_typeof(document) = 'object'),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (namespace, seq)
);

-- Only a hash of each token's secret is stored, never the secret.
CREATE TABLE tokens (
    id           text PRIMARY KEY DEFAULT ('tok_' || replace(gen_random_uuid()::text, '-', '')),
    hash         text NOT NULL UNIQUE CHECK (hash ~ '^sha256:[0-9a-f]{64}$'),
    scopes       text[] NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    revoked_at   timestamptz
);

CREATE TABLE audit_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor       text,
    action      text NOT NULL,
    namespace   text,
    tool        text,
    version     integer,
    request_id  text,
    detail      jsonb NOT NULL DEFAULT '{}'::jsonb
);

CREATE INDEX audit_events_by_subject ON audit_events (namespace, tool, id);

-- Immutability ---------------------------------------------------------------

CREATE FUNCTION registry_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on %: rows of % are immutable', TG_OP, TG_TABLE_NAME, TG_TABLE_NAME
        USING ERRCODE = 'RG001';
END
$$;

CREATE FUNCTION registry_guard_version_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    label text := format('version %s of %s/%s', OLD.version, OLD.namespace, OLD.tool);
    effective version_state := CASE WHEN OLD.state = 'deprecated' AND OLD.sunset <= now()
                                    THEN 'retired'::version_state ELSE OLD.state END;
BEGIN
    IF NEW.namespace IS DISTINCT FROM OLD.namespace
       OR NEW.tool IS DISTINCT FROM OLD.tool
       OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.digest IS DISTINCT FROM OLD.digest
       OR NEW.definition IS DISTINCT FROM OLD.definition
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION '% is immutable: only its state and sunset may change', label
            USING ERRCODE = 'RG001';
    END IF;
    IF NEW.state < OLD.state THEN
        RAISE EXCEPTION '% is %: states only move forward (active -> deprecated -> retired)',
            label, OLD.state
            USING ERRCODE = 'RG002';
    END IF;
    IF effective = 'retired'
       AND (NEW.state <> 'retired' OR NEW.sunset IS DISTINCT FROM OLD.sunset) THEN
        RAISE EXCEPTION '% is retired, which is final', label
            USING ERRCODE = 'RG002';
    END IF;
    IF OLD.sunset IS NOT NULL AND NEW.sunset IS NULL THEN
        RAISE EXCEPTION '% has a sunset, which may be moved but not removed', label
            USING ERRCODE = 'RG002';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER versions_guard_update BEFORE UPDATE ON versions
    FOR EACH ROW EXECUTE FUNCTION registry_guard_version_update();

CREATE FUNCTION registry_guard_token_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id
       OR NEW.hash IS DISTINCT FROM OLD.hash
       OR NEW.scopes IS DISTINCT FROM OLD.scopes
       OR NEW.description IS DISTINCT FROM OLD.description
       OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR (OLD.revoked_at IS NOT NULL AND NEW.revoked_at IS DISTINCT FROM OLD.revoked_at) THEN
        RAISE EXCEPTION 'token %: a token can only be revoked, once', OLD.id
            USING ERRCODE = 'RG001';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER tokens_guard_update BEFORE UPDATE ON tokens
    FOR EACH ROW EXECUTE FUNCTION registry_guard_token_update();

CREATE TRIGGER versions_refuse_delete BEFORE DELETE ON versions
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER tokens_refuse_delete BEFORE DELETE ON tokens
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER converters_refuse_change BEFORE UPDATE OR DELETE ON converters
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER capabilities_refuse_change BEFORE UPDATE OR DELETE ON capabilities
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER audit_events_refuse_change BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();

CREATE TRIGGER versions_refuse_truncate BEFORE TRUNCATE ON versions
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER tokens_refuse_truncate BEFORE TRUNCATE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER converters_refuse_truncate BEFORE TRUNCATE ON converters
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER capabilities_refuse_truncate BEFORE TRUNCATE ON capabilities
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER audit_events_refuse_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
