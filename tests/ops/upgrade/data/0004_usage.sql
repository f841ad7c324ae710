-- Written once 0004_usage.sql is applied: usage counts as gated servers report them.
INSERT INTO usage_counts (namespace, tool, version, decision, reason, server, toolset, bucket, calls, last_seen) VALUES
    ('billing', 'db.query', 2, 'accepted', '', 'billing-1',
     'sha256:28942c4850cbb9f01cc2ee7b43438e2a7fbf8977f1ffcf9b219c725c181f37c8',
     '2026-12-03 10:00:00+00', 40, '2026-12-03 10:41:07.5+00'),
    ('billing', 'db.query', 1, 'converted', '', 'billing-1',
     'sha256:28942c4850cbb9f01cc2ee7b43438e2a7fbf8977f1ffcf9b219c725c181f37c8',
     '2026-12-03 10:00:00+00', 3, '2026-12-03 10:41:07.5+00'),
    ('billing', 'search', 0, 'refused', 'strict_validation_failed', 'billing-1',
     'sha256:28942c4850cbb9f01cc2ee7b43438e2a7fbf8977f1ffcf9b219c725c181f37c8',
     '2026-12-03 11:00:00+00', 1, '2026-12-03 11:02:00+00');
