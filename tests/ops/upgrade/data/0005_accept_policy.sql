-- Written once 0005_accept_policy.sql is applied: a version published with a breaking
-- change accepted on purpose, and a namespace policy, with their audit events.
INSERT INTO versions (namespace, tool, version, digest, definition, state, sunset, created_at, acceptances) VALUES
    ('docs', 'notes.add', 3,
     'sha256:95529c9d7dc290a67ce195181ec4263fc5a2e68c964e23c0737e139baef1afe2',
     '{"name": "notes.add", "title": "Add a note", "description": "Add a note.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}, "tags": {"type": "array"}, "pinned": {"type": "boolean", "default": false}}}, "outputSchema": {"type": "object", "properties": {"id": {"type": "integer"}}}, "annotations": {"readOnlyHint": false}, "_meta": {"team": "docs"}}',
     'active', NULL, '2026-12-03 12:00:00+00',
     '[{"kind": "default-added", "path": "/inputSchema/properties/pinned/default", "reason": "notes were never pinned before", "source": "request", "versions": [1, 2]}]');
INSERT INTO namespace_policies (namespace, policy, updated_at) VALUES
    ('billing', '{"gating": true, "reason": null, "relax": [{"kind": "enum-narrowed", "tool": "search", "reason": "old modes were never used"}]}', '2026-12-03 12:01:00+00');
INSERT INTO audit_events (at, actor, action, namespace, tool, version, request_id, detail) VALUES
    ('2026-12-03 12:00:00.1+00', 'bootstrap', 'version.publish', 'docs', 'notes.add', 3, 'r-0005-1',
     '{"digest": "sha256:95529c9d7dc290a67ce195181ec4263fc5a2e68c964e23c0737e139baef1afe2", "severity": "breaking", "acceptances": [{"kind": "default-added", "path": "/inputSchema/properties/pinned/default", "reason": "notes were never pinned before", "source": "request", "versions": [1, 2]}]}'),
    ('2026-12-03 12:01:00.1+00', 'bootstrap', 'namespace.policy', 'billing', NULL, NULL, 'r-0005-2',
     '{"policy": {"gating": true, "reason": null, "relax": [{"kind": "enum-narrowed", "tool": "search", "reason": "old modes were never used"}]}, "previous": null}');
