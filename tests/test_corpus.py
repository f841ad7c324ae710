"""The real corpus of MCP tool-schema histories (tests/corpus/): every pair
classified without error, every witness confirmed, the hand labels agreed
with, and no pair that jsonsubschema's closed-world check proves breaking
called safe."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from registry.compat import Kind, Severity, classify
from registry.compat.kinds import READ_DIFFERENTLY
from registry.sdk.strict import strict_schema
from tests.corpus import Pair, load_labels, load_pairs

pytestmark = pytest.mark.corpus

PAIRS = load_pairs()


def _verdict(pair: Pair) -> Severity:
    if pair.new is None:
        return Severity.BREAKING  # the tool is gone: every caller breaks
    return classify(pair.old, pair.new).severity


def test_every_pair_is_classified_and_witnesses_hold() -> None:
    assert len(PAIRS) >= 300
    for pair in PAIRS:
        if pair.new is None:
            continue
        report = classify(pair.old, pair.new)
        old_schema = pair.old.get("inputSchema") or {"type": "object"}
        new_schema = pair.new.get("inputSchema") or {"type": "object"}
        old_validator = validator_for(old_schema, default=Draft202012Validator)(old_schema)
        new_validator = validator_for(new_schema, default=Draft202012Validator)(new_schema)
        strict = validator_for(new_schema, default=Draft202012Validator)(strict_schema(new_schema))
        for change in report.breaking:
            if change.witness is not None:
                assert old_validator.is_valid(change.witness), (pair.id, change)
                if change.kind in (Kind.PROPERTY_REMOVED, Kind.PROPERTY_RENAMED):
                    # still accepted by an open object, and ignored: the gate's reading refuses it
                    assert not strict.is_valid(change.witness), (pair.id, change)
                elif change.kind not in READ_DIFFERENTLY:  # (defaults: valid, read otherwise)
                    assert not new_validator.is_valid(change.witness), (pair.id, change)


def test_hand_labels_agree() -> None:
    by_id = {pair.id: pair for pair in PAIRS}
    labels = load_labels()
    assert labels
    for label in labels:
        verdict = _verdict(by_id[label["id"]])
        expected_breaking = label["breaks"] == "yes"
        assert (verdict is Severity.BREAKING) == expected_breaking, (label, verdict)


def test_closed_world_incompatibility_is_always_reported_breaking() -> None:
    checked = 0
    for pair in PAIRS:
        if pair.new is None or pair.closed_world_old_in_new is not False:
            continue
        checked += 1
        assert _verdict(pair) is Severity.BREAKING, pair.id
    assert checked > 0
