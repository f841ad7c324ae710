"""The real corpus of MCP tool-schema histories (../shared/corpus/): every pair
classified without error, the hand labels agreed with, and no pair that
jsonsubschema's closed-world check proves breaking called safe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from registry.compat import Severity, classify

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def _records() -> list[dict[str, Any]]:
    path = CORPUS / "github-mcp-server.jsonl"
    if not path.exists():
        pytest.skip(f"corpus not found at {path}")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _verdict(record: dict[str, Any]) -> Severity:
    if record["new"] is None:
        return Severity.BREAKING  # the tool is gone: every caller breaks
    return classify(record["old"], record["new"]).severity


def test_every_pair_is_classified_and_witnesses_hold() -> None:
    records = _records()
    assert len(records) >= 300
    for record in records:
        if record["new"] is None:
            continue
        report = classify(record["old"], record["new"])
        old_schema = record["old"].get("inputSchema") or {"type": "object"}
        validator = Draft202012Validator(old_schema)
        for change in report.breaking:
            if change.witness is not None:
                assert validator.is_valid(change.witness), (record["id"], change)


def test_hand_labels_agree() -> None:
    by_id = {r["id"]: r for r in _records()}
    labels = json.loads((CORPUS / "labels.json").read_text())
    assert labels
    for label in labels:
        verdict = _verdict(by_id[label["id"]])
        expected_breaking = label["breaks"] == "yes"
        assert (verdict is Severity.BREAKING) == expected_breaking, (label, verdict)


def test_closed_world_incompatibility_is_always_reported_breaking() -> None:
    checked = 0
    for record in _records():
        closed = (record.get("jsonsubschema") or {}).get("input_closed") or {}
        if record["new"] is None or (closed.get("old_in_new") or {}).get("result") is not False:
            continue
        checked += 1
        assert _verdict(record) is Severity.BREAKING, record["id"]
    assert checked > 0
