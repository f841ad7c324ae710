"""The kind registry (registry/compat/kinds.py) against the rules and the fixtures.

Every case under tests/cases/ gets exactly its expected report, message text
included, and every breaking input witness holds under python-jsonschema.
Every kind has a case, a severity on both sides, a message and a rule whose
docstring shows an example. Every finding the engine makes, on the cases, on
the corpus and on generated pairs, is made by a rule the kind's row names: a
test wraps the making of each finding and names the rule on the stack.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.validators import validator_for

import registry.compat
from registry.compat import ClassificationError, Kind, Severity, classify
from registry.compat.kinds import KINDS, MESSAGES, READ_DIFFERENTLY, SEVERITY
from registry.compat.rules_tool import MCP_TOOL_FIELDS
from registry.compat.walk import Finding
from registry.sdk.strict import strict_schema
from tests.cases import Case, load_cases, report_text
from tests.corpus import load_pairs
from tests.test_soundness import mutated, object_schemas
from tests.test_soundness_keywords import mutated as keyword_mutated
from tests.test_soundness_keywords import schemas as keyword_schemas

CASES = load_cases()
DEFINITION_CASES = [case for case in CASES if not case.toolset]

# rule (`module.function` under registry/compat) -> the kinds it may report
OWNED: dict[str, set[Kind]] = {}
for _kind, _spec in KINDS.items():
    for _rule in _spec.rules:
        OWNED.setdefault(_rule, set()).add(_kind)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_case_gets_exactly_its_expected_report(case: Case) -> None:
    assert report_text(case) == case.expected_text
    kinds = {change["kind"] for change in _changes(case)}
    assert case.kind in kinds, f"{case.id}: the case reports none of its kind"


def _changes(case: Case) -> list[dict[str, Any]]:
    expected = json.loads(case.expected_text)
    return expected if case.toolset else expected["changes"]


@pytest.mark.parametrize("case", DEFINITION_CASES, ids=[c.id for c in DEFINITION_CASES])
def test_every_breaking_input_witness_holds(case: Case) -> None:
    report = classify(case.old, case.new)
    old_schema, new_schema = case.old["inputSchema"], case.new["inputSchema"]
    old_validator = _validator(old_schema)
    new_validator = _validator(new_schema)
    for change in report.breaking:
        if not change.path.startswith("/inputSchema"):
            continue
        if change.kind is Kind.UNANALYZABLE and change.witness is None:
            continue  # (fail closed: the engine could not tell, so it shows nothing)
        assert change.witness is not None, f"{case.id}: breaking input change without a witness"
        assert old_validator.is_valid(change.witness), change.witness
        if change.kind in (Kind.PROPERTY_REMOVED, Kind.PROPERTY_RENAMED):
            # kept by an open object and ignored: refused as the gate reads a version-less call
            strict = _validator(strict_schema(new_schema))
            assert not strict.is_valid(change.witness), change.witness
        elif change.kind not in READ_DIFFERENTLY:
            assert not new_validator.is_valid(change.witness), change.witness


def _validator(schema: Any) -> Any:
    """python-jsonschema's validator of `schema`, in the dialect it names."""
    return validator_for(schema, default=Draft202012Validator)(
        schema, format_checker=FormatChecker()
    )


@pytest.mark.parametrize("case", DEFINITION_CASES, ids=[c.id for c in DEFINITION_CASES])
def test_every_definition_compared_with_itself_is_identical(case: Case) -> None:
    for definition in (case.old, case.new):
        report = classify(definition, dict(definition) | {"_meta": {"x": 1}})
        assert report.severity is Severity.IDENTICAL
        assert report.changes == []


def test_every_kind_has_a_case_a_message_a_severity_on_both_sides_and_a_rule() -> None:
    assert {case.kind for case in CASES} == {kind.value for kind in Kind}
    assert set(MESSAGES) == set(SEVERITY) == set(KINDS) == set(Kind)
    for kind, spec in KINDS.items():
        assert spec.rules, kind
        assert spec.replaces is None or spec.replaces in KINDS, kind


def test_every_rule_of_the_registry_is_a_function_whose_docstring_shows_its_kinds() -> None:
    """`grep -n <kind> registry/compat` lands on each rule that reports it."""
    for rule, kinds in OWNED.items():
        module, _, name = rule.partition(".")
        function = getattr(importlib.import_module(f"registry.compat.{module}"), name, None)
        assert inspect.isfunction(function), f"{rule} is not a function of registry.compat"
        doc = inspect.getdoc(function) or ""
        assert "Example" in doc, f"{rule}: no example in its docstring"
        for kind in kinds:
            assert f"`{kind.value}`" in doc, f"{rule}: its docstring does not name `{kind}`"


# -- who makes each finding ----------------------------------------------------


def _rule_of(frame: FrameType | None) -> str:
    """The innermost rule of the registry on the stack (the one making the finding)."""
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("registry.compat."):
            rule = f"{module.removeprefix('registry.compat.')}.{frame.f_code.co_name}"
            if rule in OWNED:
                return rule
        frame = frame.f_back
    return "(no rule of the registry)"


# every module of the engine, imported (the package's face loads them when first asked)
ENGINE = [
    importlib.import_module(f"registry.compat.{module.name}")
    for module in pkgutil.iter_modules(registry.compat.__path__)
]


@contextmanager
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[tuple[str, Kind]]]:
    """Every (rule, kind) of the findings made inside the block: `Finding` (a
    msgspec Struct, built in C) is replaced where the engine's modules name it."""
    made: set[tuple[str, Kind]] = set()

    def making(**fields: Any) -> Finding:
        finding = Finding(**fields)
        made.add((_rule_of(sys._getframe(1)), finding.kind))
        return finding

    with monkeypatch.context() as patch:
        for module in ENGINE:
            if getattr(module, "Finding", None) is Finding:
                patch.setattr(module, "Finding", making)
        yield made


def _strays(made: set[tuple[str, Kind]]) -> list[str]:
    return sorted(
        f"{rule} reported {kind}" for rule, kind in made if kind not in OWNED.get(rule, ())
    )


def test_the_cases_show_every_rule_reporting_each_of_its_kinds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The registry's claims are all made true by a fixture, and none is missing."""
    with traced(monkeypatch) as made:
        for case in CASES:
            report_text(case)
    assert _strays(made) == []
    declared = {(rule, kind) for rule, kinds in OWNED.items() for kind in kinds}
    assert sorted(f"{rule} {kind}" for rule, kind in declared - made) == []


@pytest.mark.corpus
def test_the_corpus_is_reported_by_the_rules_that_own_its_kinds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with traced(monkeypatch) as made:
        for pair in load_pairs():
            if pair.new is not None:
                classify(pair.old, pair.new)
                classify(pair.new, pair.old)
    assert _strays(made) == []


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), keywords=st.booleans(), output=st.booleans())
def test_generated_pairs_are_reported_by_the_rules_that_own_their_kinds(
    data: st.DataObject, keywords: bool, output: bool
) -> None:
    old = data.draw(keyword_schemas() if keywords else object_schemas())
    new = data.draw(keyword_mutated(old) if keywords else mutated(old))
    side = "outputSchema" if output else "inputSchema"
    # (a generated schema the engine refuses makes no finding)
    with (
        pytest.MonkeyPatch.context() as patch,
        traced(patch) as made,
        suppress(ClassificationError),
    ):
        classify({"name": "t", side: old}, {"name": "t", side: new})
    assert _strays(made) == []


def test_the_mcp_tool_fields_are_those_of_the_installed_sdk() -> None:
    from mcp.types import Tool

    fields = {field.alias or name for name, field in Tool.model_fields.items()}
    assert fields == set(MCP_TOOL_FIELDS)
