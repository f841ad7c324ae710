-- Written once 0007_modes_replicas.sql is applied: a namespace with a mode of its own.
INSERT INTO namespace_modes (namespace, mode, reason, updated_at) VALUES
    ('docs', 'read-only', 'frozen for review', '2026-12-04 09:00:00+00');
INSERT INTO audit_events (at, actor, action, namespace, tool, version, request_id, detail) VALUES
    ('2026-12-04 09:00:00.1+00', 'bootstrap', 'namespace.mode', 'docs', NULL, NULL, 'r-0007-1',
     '{"mode": "read-only", "reason": "frozen for review", "previous": null}');
