-- Breaking changes accepted on purpose, and namespace policies.
--
-- versions.acceptances: the breaking changes a version was published with on
-- purpose (a publish's `accept: [{kind, path, reason}]`, or a kind the
-- namespace policy relaxed), each `{kind, path, reason, source, versions}`.
-- They are part of the immutable record: the route search counts a step into
-- this version as an identity step when every breaking change of the step is
-- among them, so they must never change once stored (the guard below).
--
-- namespace_policies: at most one per namespace; a namespace without a row
-- has the default policy (gating on, nothing relaxed). Changed by
-- `PUT /v1/namespaces/{ns}/policy`, each change in the audit log with the
-- previous policy.

ALTER TABLE versions
    ADD COLUMN acceptances jsonb NOT NULL DEFAULT '[]'::jsonb
        CHECK (jsonb_typeof(acceptances) = 'array');

-- the view gains the column at its end (CREATE OR REPLACE VIEW may only add columns)
CREATE OR REPLACE VIEW versions_effective AS
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
       created_at,
       acceptances
FROM versions;

CREATE OR REPLACE FUNCTION registry_guard_version_update() RETURNS trigger
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
       OR NEW.acceptances IS DISTINCT FROM OLD.acceptances
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

CREATE TABLE namespace_policies (
    namespace   text PRIMARY KEY REFERENCES namespaces (name),
    policy      jsonb NOT NULL CHECK (jsonb_typeof(policy) = 'object'),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
