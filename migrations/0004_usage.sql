-- Usage counts reported by gated servers (POST /v1/namespaces/{ns}/usage):
-- how many calls of each tool version each server saw, and how the gate
-- decided them. Counts only: no argument value ever reaches this table.
--
-- One row per (tool, version, decision, reason, server, toolset, bucket),
-- bucket = the hour the registry received the report in; a report adds its
-- calls to the row of its hour and moves `last_seen` (the receipt time) on.
-- Rows older than the retention setting are deleted by the service; unlike
-- the audit log, counts are not a record the registry must keep forever.
--
-- version 0 stands for "no version": a version-less call refused with no
-- version inferred, or a declaration that reads as no version.
-- reason is '' unless decision = 'refused' (a primary key holds no NULL).

CREATE TABLE usage_counts (
    namespace   text NOT NULL REFERENCES namespaces (name),
    tool        text NOT NULL,
    version     integer NOT NULL CHECK (version >= 0),
    decision    text NOT NULL CHECK (decision IN ('accepted', 'converted', 'refused')),
    reason      text NOT NULL DEFAULT '' CHECK ((decision = 'refused') = (reason <> '')),
    server      text NOT NULL CHECK (length(server) BETWEEN 1 AND 128),
    toolset     text NOT NULL CHECK (toolset ~ '^sha256:[0-9a-f]{64}$'),
    bucket      timestamptz NOT NULL,
    calls       bigint NOT NULL CHECK (calls >= 0),
    last_seen   timestamptz NOT NULL,
    PRIMARY KEY (namespace, tool, version, bucket, server, toolset, decision, reason),
    FOREIGN KEY (namespace, tool) REFERENCES tools (namespace, name)
);

-- retention deletes by age
CREATE INDEX usage_counts_by_bucket ON usage_counts (bucket);
