"""The plain validity check (registry/compat/validity.py) answers as the witness
search's python-jsonschema validator does, wherever it answers at all."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import Draft7Validator

from registry.compat import classify
from registry.compat import witnesses as witness_search
from registry.compat.jsonvalues import encode
from registry.compat.validity import Unsupported, plain_checker
from tests import test_soundness, test_soundness_keywords, test_soundness_unions
from tests.corpus import load_pairs

KEYWORDS = test_soundness_keywords


def python_says(schema: Any, value: Any) -> bool:
    """The witness search's own python-jsonschema verdict."""
    return bool(witness_search._validator(schema, encode(schema)).is_valid(value))


def plain_says(schema: Any, value: Any) -> bool | None:
    """The plain check's verdict, None where it leaves the value to python-jsonschema."""
    check = plain_checker(schema, encode(schema))
    if check is None:
        return None
    try:
        return check(value)
    except Unsupported:
        return None


values = st.one_of(
    KEYWORDS.json_values,
    st.sampled_from([1.0, 2.0, -0.0, 0.5, True, False, 10**20, 1e300, math.nan, "ab" * 3]),
)


@st.composite
def keyword_schemas(draw: Any) -> Any:
    body = {"$defs": {"shared": draw(KEYWORDS.leaves)}, **draw(KEYWORDS.schemas())}
    dialect = draw(st.sampled_from([KEYWORDS.DRAFT_2020, KEYWORDS.DRAFT_07, None]))
    return body if dialect is None else KEYWORDS.in_dialect(body, dialect)


SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(schema=keyword_schemas(), drawn=st.lists(values, min_size=10, max_size=10))
def test_agrees_with_python_jsonschema_on_keyword_schemas(schema: Any, drawn: list[Any]) -> None:
    for value in drawn:
        verdict = plain_says(schema, value)
        if verdict is not None:
            assert verdict == python_says(schema, value), (schema, value)


@SETTINGS
@given(data=st.data())
def test_agrees_on_object_and_union_schemas(data: st.DataObject) -> None:
    schema = data.draw(
        st.one_of(test_soundness.object_schemas(), test_soundness_unions.arguments())
    )
    for value in data.draw(st.lists(values, min_size=10, max_size=10)):
        verdict = plain_says(schema, value)
        if verdict is not None:
            assert verdict == python_says(schema, value), (schema, value)


CASES = [
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, 1.5, False),
    ({"type": "integer"}, True, False),
    ({"type": "number"}, False, False),
    ({"type": ["string", "null"]}, None, True),
    ({"enum": [1]}, 1.0, True),
    ({"enum": [1]}, True, False),
    ({"enum": [[1, {"a": False}]]}, [1.0, {"a": False}], True),
    ({"enum": [[1, {"a": False}]]}, [1.0, {"a": 0}], False),
    ({"const": {"a": 1}}, {"a": 1, "b": 2}, False),
    ({"minLength": 2}, "\U0001f600\U0001f600", True),
    ({"maxLength": 1}, "\U0001f600\U0001f600", False),
    ({"minimum": 1}, math.nan, True),
    ({"exclusiveMaximum": 0}, -0.0, False),
    ({"pattern": "^a+$"}, "aaa", True),
    ({"pattern": "^a+$"}, "aab", False),
    ({"pattern": "^a+$"}, 5, True),
    ({"format": "date"}, "2024-13-45", False),
    ({"format": "date"}, "2024-01-01", True),
    ({"properties": {"a": False}, "additionalProperties": False}, {"b": 1}, False),
    ({"properties": {"a": {"type": "string"}}, "required": ["b"]}, {"a": "x"}, False),
    ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, False),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"a": 1}, False),
    ({"if": {"required": ["a"]}, "else": {"required": ["b"]}}, {"c": 1}, False),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, False),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.5, True),
    ({"not": {"type": "string"}}, "x", False),
    ({"$defs": {"d": {"type": "string"}}, "$ref": "#/$defs/d"}, 5, False),
    ({"$defs": {"d": {"type": "string"}}, "$ref": "#/$defs/d", "minLength": 2}, "a", False),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1, "b": 2}, True),
    ({"items": {"type": "integer"}, "maxItems": 2}, [1, 2.0], True),
    ({"items": {"type": "integer"}, "maxItems": 2}, [1, 2, 3], False),
    ({"x-vendor": {"type": "string"}, "nullable": True}, 5, True),  # not keywords: annotations
]


@pytest.mark.parametrize(("schema", "value", "valid"), CASES)
def test_known_answers(schema: Any, value: Any, valid: bool) -> None:
    assert python_says(schema, value) is valid
    assert plain_says(schema, value) is valid


LEFT_TO_PYTHON = [
    ({"multipleOf": 0.01}, 0.07),
    ({"uniqueItems": True}, [1, True]),
    ({"prefixItems": [{"type": "string"}]}, ["a"]),
    ({"contains": {"type": "string"}}, ["a"]),
    ({"patternProperties": {"^x": {"type": "string"}}}, {"x": 1}),
    ({"unevaluatedProperties": False}, {"a": 1}),
    ({"$id": "https://example.com/s", "$defs": {"d": {}}, "$ref": "#/$defs/d"}, 1),
    ({"$ref": "https://example.com/remote"}, 1),
    ({"type": "whatever"}, 1),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}, ["a"]),
    (
        {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#/definitions/d"},
        1,
    ),
]


@pytest.mark.parametrize(("schema", "value"), LEFT_TO_PYTHON)
def test_what_it_does_not_read_is_left_to_python_jsonschema(schema: Any, value: Any) -> None:
    assert plain_says(schema, value) is None


def test_a_dialect_it_does_not_know_is_left_to_python_jsonschema() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    assert plain_checker(draft4, encode(draft4)) is None  # 1.0 is no integer in draft 4


def test_every_verdict_of_the_corpus_witness_search_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each candidate the search checks on the corpus, both ways."""
    asked: list[tuple[Any, Any]] = []
    verdict = witness_search.WitnessSearch._verdict

    def recorded(self: Any, side: int, value: Any) -> bool:
        asked.append((self.schemas[side][0], value))
        return verdict(self, side, value)

    monkeypatch.setattr(witness_search.WitnessSearch, "_verdict", recorded)
    for pair in load_pairs():
        if pair.new is not None:
            classify(pair.old, pair.new)
    answered = 0
    for schema, value in asked:
        plain = plain_says(schema, value)
        if plain is not None:
            answered += 1
            assert plain == python_says(schema, value), (schema, value)
    assert answered > len(asked) // 2  # it does the work on real schemas


def test_without_formats_a_format_asserts_nothing_as_without_a_checker() -> None:
    """As `rules_objects._sendable` validates a property's schema (no format checker)."""
    schema = {"type": "string", "format": "date"}
    check = plain_checker(schema, encode(schema), Draft7Validator, formats=False)
    assert check is not None
    assert check("2024-13-45") is True
    assert Draft7Validator(schema).is_valid("2024-13-45")
    assert check(5) is False
