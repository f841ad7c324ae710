-- Review before release (issue 26): versions that wait for an owner.
--
-- A namespace whose policy asks for review (`review: "risky"` or `"all"`,
-- registry/policy/review.py) stores a new version as `pending`: numbered at
-- publish (a number is never reused), immutable like every version, served
-- nowhere. Approval moves it to `active`, where it lands as a publish lands
-- (its converters and state changes with it); rejection moves it to
-- `rejected`, final and never served. So the states are
--
--   pending -> active -> deprecated -> retired        (approved)
--   pending -> rejected                               (rejected: final)
--
-- and the enum gains 'pending' before 'active' and 'rejected' after 'retired',
-- so that "states only move forward" still reads as the enum's order; the
-- guard below refuses the moves that order alone would let through (active ->
-- rejected, pending -> deprecated). A version's acceptances are fixed once it
-- is released: approval sets them, as the publishing rule finds them then.
--
-- reviews: one row per held version, written at publish: the review policy
-- that held it, what its publish asked for (retire, deprecate, converters,
-- accept, require_idle: applied at approval), the risk findings it was held
-- with and the version they were found against (NULL: a first version), who
-- published it; and, once, the decision (approved or rejected), who made it,
-- why and when. A pending version older than one that lands is rejected then
-- ("superseded"): what waits is always newer than current.
--
-- versions_effective now holds the released versions only (neither pending nor
-- rejected): every read of what is served (toolsets, routes, verify, usage, the
-- publishing rule) leaves held versions out, an older replica's included.
-- versions_all holds every version (history, one version, digests, reviews).
--
-- Safe while older replicas serve: new enum values (no table is touched), a
-- view replaced with the same columns, a new table, a trigger function
-- replaced, and a CHECK added NOT VALID (checked for new rows only, so no
-- scan). An older replica never serves a held version, but it neither holds
-- versions for review nor numbers past held ones: turn review on once every
-- replica runs this release. Its policies stay readable by older replicas:
-- the review fields are stored only when they differ from the default.
--
-- A new enum value cannot be used in the transaction that adds it, so the
-- views compare the state as text.

ALTER TYPE version_state ADD VALUE IF NOT EXISTS 'pending' BEFORE 'active';
ALTER TYPE version_state ADD VALUE IF NOT EXISTS 'rejected' AFTER 'retired';

CREATE VIEW versions_all AS
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

CREATE OR REPLACE VIEW versions_effective AS
SELECT namespace, tool, version, digest, definition, state, stored_state, sunset, created_at,
       acceptances
FROM versions_all
WHERE state::text NOT IN ('pending', 'rejected');

ALTER TABLE versions
    ADD CONSTRAINT versions_held_without_sunset
    CHECK (state::text NOT IN ('pending', 'rejected') OR sunset IS NULL) NOT VALID;

CREATE OR REPLACE FUNCTION registry_guard_version_update() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    label text := format('version %s of %s/%s', OLD.version, OLD.namespace, OLD.tool);
    effective version_state := CASE WHEN OLD.state = 'deprecated' AND OLD.sunset <= now()
                                    THEN 'retired'::version_state ELSE OLD.state END;
    approving boolean := OLD.state = 'pending' AND NEW.state = 'active';
BEGIN
    IF NEW.namespace IS DISTINCT FROM OLD.namespace
       OR NEW.tool IS DISTINCT FROM OLD.tool
       OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.digest IS DISTINCT FROM OLD.digest
       OR NEW.definition IS DISTINCT FROM OLD.definition
       OR (NEW.acceptances IS DISTINCT FROM OLD.acceptances AND NOT approving)
       OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
        RAISE EXCEPTION '% is immutable: only its state and sunset may change', label
            USING ERRCODE = 'RG001';
    END IF;
    IF OLD.state = 'rejected' AND (NEW.state <> 'rejected' OR NEW.sunset IS NOT NULL) THEN
        RAISE EXCEPTION '% was rejected, which is final', label
            USING ERRCODE = 'RG002';
    END IF;
    IF OLD.state = 'pending' AND NEW.state NOT IN ('pending', 'active', 'rejected') THEN
        RAISE EXCEPTION '% is pending review: it is approved (active) or rejected first', label
            USING ERRCODE = 'RG002';
    END IF;
    IF NEW.state = 'rejected' AND OLD.state NOT IN ('pending', 'rejected') THEN
        RAISE EXCEPTION '% is %: only a pending version is rejected', label, OLD.state
            USING ERRCODE = 'RG002';
    END IF;
    IF NEW.state IN ('pending', 'rejected') AND NEW.sunset IS NOT NULL THEN
        RAISE EXCEPTION '% is %: a version that is not released has no sunset',
            label, NEW.state
            USING ERRCODE = 'RG002';
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

CREATE TABLE reviews (
    namespace     text NOT NULL,
    tool          text NOT NULL,
    version       integer NOT NULL,
    review        text NOT NULL CHECK (review IN ('risky', 'all')),
    request       jsonb NOT NULL CHECK (jsonb_typeof(request) = 'object'),
    risks         jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(risks) = 'array'),
    against       integer CHECK (against >= 1),
    published_by  text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    decision      text CHECK (decision IN ('approved', 'rejected')),
    decided_by    text,
    reason        text,
    decided_at    timestamptz,
    PRIMARY KEY (namespace, tool, version),
    FOREIGN KEY (namespace, tool, version) REFERENCES versions (namespace, tool, version),
    CHECK ((decision IS NULL) = (decided_at IS NULL)),
    CHECK (decision IS NULL OR reason IS NOT NULL)
);

CREATE FUNCTION registry_guard_review_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.namespace IS DISTINCT FROM OLD.namespace
       OR NEW.tool IS DISTINCT FROM OLD.tool
       OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.review IS DISTINCT FROM OLD.review
       OR NEW.request IS DISTINCT FROM OLD.request
       OR NEW.risks IS DISTINCT FROM OLD.risks
       OR NEW.against IS DISTINCT FROM OLD.against
       OR NEW.published_by IS DISTINCT FROM OLD.published_by
       OR NEW.created_at IS DISTINCT FROM OLD.created_at
       OR OLD.decision IS NOT NULL THEN
        RAISE EXCEPTION 'the review of version % of %/% is decided once, and nothing else changes',
            OLD.version, OLD.namespace, OLD.tool
            USING ERRCODE = 'RG001';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER reviews_guard_update BEFORE UPDATE ON reviews
    FOR EACH ROW EXECUTE FUNCTION registry_guard_review_update();
CREATE TRIGGER reviews_refuse_delete BEFORE DELETE ON reviews
    FOR EACH ROW EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER reviews_refuse_truncate BEFORE TRUNCATE ON reviews
    FOR EACH STATEMENT EXECUTE FUNCTION registry_refuse_change();
CREATE TRIGGER reviews_require_writable BEFORE INSERT OR UPDATE ON reviews
    FOR EACH ROW EXECUTE FUNCTION registry_require_writable();
