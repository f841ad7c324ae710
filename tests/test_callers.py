"""registry.policy.callers: durations, summaries of counts, and a retirement's evidence (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from registry.policy.callers import (
    format_duration,
    parse_duration,
    retirement_evidence,
    summarize,
)
from registry.store.usage import UsageRow

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DIGEST = "sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2s", 2), ("5m", 300), ("12h", 43200), ("7d", 604800), ("2w", 1209600), (" 3d ", 259200)],
)
def test_a_duration_is_a_number_and_one_unit(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text", ["", "7", "d", "0d", "07d", "1.5h", "7 days", "1y", "-1d", "9999w"]
)
def test_anything_else_is_refused_naming_the_rule(text: str) -> None:
    with pytest.raises(ValueError, match=r"duration|ten years"):
        parse_duration(text)


def test_a_duration_is_written_in_its_largest_whole_unit() -> None:
    assert [format_duration(parse_duration(t)) for t in ("1w", "36h", "90m", "61s")] == [
        "7d",
        "36h",
        "90m",
        "61s",
    ]


def row(version: int | None, server: str, calls: int, minutes_ago: int, **kw: str) -> UsageRow:
    return UsageRow(
        version=version,
        decision=kw.get("decision", "converted"),
        reason=kw.get("reason"),
        server=server,
        toolset=kw.get("toolset", DIGEST),
        calls=calls,
        last_seen=NOW - timedelta(minutes=minutes_ago),
    )


def test_a_summary_adds_up_per_version_server_and_decision() -> None:
    other = "sha256:" + "1" * 64
    usages = summarize(
        [
            row(3, "a", 5, 30),
            row(3, "a", 2, 10, decision="refused", reason="invalid_arguments", toolset=other),
            row(3, "b", 9, 50),
            row(4, "a", 1, 1, decision="accepted"),
            row(None, "b", 1, 5, decision="refused", reason="strict_validation_failed"),
        ]
    )
    assert [u.version for u in usages] == [4, 3, None]
    v3 = usages[1]
    assert (v3.calls, v3.last_seen) == (16, NOW - timedelta(minutes=10))
    # most calls first; each server with the toolset it reported last
    assert [(s.name, s.calls, s.toolset) for s in v3.servers] == [("b", 9, DIGEST), ("a", 7, other)]
    assert [(d.decision, d.reason, d.calls) for d in v3.decisions] == [
        ("converted", None, 14),
        ("refused", "invalid_arguments", 2),
    ]


def test_evidence_refuses_within_require_idle_warns_within_the_window_else_nothing() -> None:
    (usage,) = summarize([row(3, "billing-a", 4, 60)])
    day, week = timedelta(days=1), timedelta(days=7)
    refused = retirement_evidence("db.query", usage, now=NOW, warn=week, require_idle=day)
    assert refused.refused and refused.idle_from == NOW - timedelta(minutes=60) + day
    assert refused.message is not None and "4 calls" in refused.message
    assert "billing-a" in refused.message and "2026-06-02T11:00:00Z" in refused.message
    short = timedelta(minutes=30)
    warned = retirement_evidence("db.query", usage, now=NOW, warn=week, require_idle=short)
    assert not warned.refused and warned.message is not None
    assert "called 4 times in the last 7d" in warned.message
    quiet = retirement_evidence("db.query", usage, now=NOW, warn=short, require_idle=None)
    assert (quiet.refused, quiet.message) == (False, None)
