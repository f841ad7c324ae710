"""Canonical digests: RFC 8785 (JCS) examples, and the digest's invariants."""

from __future__ import annotations

import json
import random
import re
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.canonical import DigestError, canonical_json, digest, is_digest

# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
RFC8785_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),  # minus zero
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "expected"), RFC8785_NUMBERS)
def test_rfc8785_appendix_b_numbers(bits: str, expected: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonical_json(value) == expected.encode()


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ("1e21", "1e+21"),
        ("1e-7", "1e-7"),
        ("-0.0", "0"),
        ("333333333.33333329", "333333333.3333333"),
    ],
)
def test_number_literals_as_parsed_from_json(literal: str, expected: str) -> None:
    assert canonical_json(json.loads(literal)) == expected.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused(value: float) -> None:
    with pytest.raises(DigestError):
        canonical_json({"x": value})


def test_integers_outside_the_ieee754_safe_range_are_refused() -> None:
    assert canonical_json(2**53 - 1) == b"9007199254740991"
    with pytest.raises(DigestError):
        digest({"name": "t", "n": 2**53})


def test_rfc8785_main_example() -> None:
    """RFC 8785 section 3.2.2: whitespace goes, numbers and strings are normalised."""
    source = (
        '{\n  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],\n'
        '  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n'
        '  "literals": [null, true, false]\n}'
    )
    expected = (
        '{"literals":[null,true,false],'
        '"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_json(json.loads(source)) == expected.encode("utf-8")


def test_rfc8785_key_sorting_by_utf16_code_units() -> None:
    """RFC 8785 section 3.2.3: U+1F600 (surrogates D83D DE00) sorts before U+FB33."""
    source = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
        "\u05d0": "Hebrew Letter Alef",
    }
    ordered = list(json.loads(canonical_json(source)).values())
    assert ordered == [
        "Carriage Return",
        "One",
        "Control",
        "Latin Small Letter O With Diaeresis",
        "Hebrew Letter Alef",
        "Euro Sign",
        "Emoji: Grinning Face",
        "Hebrew Letter Dalet With Dagesh",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\n\r\t\b\f", '"\\n\\r\\t\\b\\f"'),
        ("\u0001\u001f", '"\\u0001\\u001f"'),  # other controls: lowercase \u escapes
        ('"\\', '"\\"\\\\"'),
        ("/", '"/"'),  # the solidus is not escaped
        ("\u007f\u00e9\u20ac\U0001f600", '"\u007f\u00e9\u20ac\U0001f600"'),  # raw UTF-8
    ],
)
def test_string_escapes(text: str, expected: str) -> None:
    assert canonical_json(text) == expected.encode("utf-8")


# -- digest invariants -----------------------------------------------------------

DIGEST_FORMAT = re.compile(r"sha256:[0-9a-f]{64}")

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
definitions = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[A-Za-z0-9._-]{1,16}", fullmatch=True),
        "inputSchema": st.dictionaries(st.text(max_size=6), json_values, max_size=4),
    },
    optional={
        "title": st.text(max_size=10),
        "description": st.text(max_size=20),
        "annotations": st.dictionaries(st.text(max_size=8), st.booleans(), max_size=3),
        "outputSchema": st.dictionaries(st.text(max_size=6), json_values, max_size=3),
        "_meta": json_values,
    },
)


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, as a path of keys and indices."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], tuple(rest), new)}
    copy = list(value)
    copy[head] = _replace(copy[head], tuple(rest), new)
    return copy


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@settings(max_examples=50, deadline=None)
@given(definition=definitions, seed=st.integers(), indent=st.sampled_from([None, 0, 1, 4, "\t"]))
def test_key_order_and_whitespace_never_change_a_digest(
    definition: dict[str, Any], seed: int, indent: int | str | None
) -> None:
    rewritten = json.loads(json.dumps(_shuffled(definition, random.Random(seed)), indent=indent))
    assert digest(rewritten) == digest(definition)


@settings(max_examples=50, deadline=None)
@given(definition=definitions, data=st.data())
def test_any_change_outside_meta_changes_the_digest(
    definition: dict[str, Any], data: st.DataObject
) -> None:
    places = [path for path in _paths(definition) if path[0] != "_meta"]
    path = data.draw(st.sampled_from(places))
    # Wrapping a value in an array changes it under every JSON equivalence
    # (unlike 1 -> 1.0 or 0.0 -> -0.0, which JCS rightly writes the same).
    changed = _replace(definition, path, [_get(definition, path)])
    assert digest(changed) != digest(definition)


@settings(max_examples=50, deadline=None)
@given(definition=definitions, key=st.text(max_size=6), value=json_values, data=st.data())
def test_adding_a_member_outside_meta_changes_the_digest(
    definition: dict[str, Any], key: str, value: Any, data: st.DataObject
) -> None:
    objects = [()] + [
        p for p in _paths(definition) if p[0] != "_meta" and isinstance(_get(definition, p), dict)
    ]
    path = data.draw(st.sampled_from(objects))
    target = _get(definition, path)
    if key in target or (not path and key == "_meta"):
        return
    changed = _replace(definition, path, {**target, key: value})
    assert digest(changed) != digest(definition)


@settings(max_examples=50, deadline=None)
@given(definition=definitions, meta=json_values)
def test_meta_never_changes_the_digest(definition: dict[str, Any], meta: Any) -> None:
    without = {key: value for key, value in definition.items() if key != "_meta"}
    assert digest({**definition, "_meta": meta}) == digest(without)


@settings(max_examples=50, deadline=None)
@given(definition=definitions)
def test_digest_format(definition: dict[str, Any]) -> None:
    value = digest(definition)
    assert DIGEST_FORMAT.fullmatch(value)
    assert is_digest(value)


def test_digest_is_sha256_of_the_canonical_json_without_meta() -> None:
    import hashlib

    definition = {"name": "b", "inputSchema": {"type": "object"}, "_meta": {"x": 1}, "a": 1.0}
    body = b'{"a":1,"inputSchema":{"type":"object"},"name":"b"}'
    assert canonical_json({k: v for k, v in definition.items() if k != "_meta"}) == body
    assert digest(definition) == "sha256:" + hashlib.sha256(body).hexdigest()


@pytest.mark.parametrize("value", [[], "tool", None, 3])
def test_a_definition_that_is_not_an_object_is_refused(value: Any) -> None:
    with pytest.raises(DigestError):
        digest(value)


@pytest.mark.parametrize(
    "text", ["sha256:" + "0" * 63, "sha256:" + "A" * 64, "sha1:" + "0" * 64, "0" * 64]
)
def test_is_digest_refuses_malformed_digests(text: str) -> None:
    assert not is_digest(text)


# -- the fast path against the reference implementation -----------------------------
# `canonical_json` writes most values with msgspec and sends the rest to the `rfc8785`
# package; whatever it does, its bytes (or its refusal) must be the package's.

# Characters where JCS and a naive encoder could disagree: controls, the escapes,
# DEL, the line separators, the top of the BMP (sorted after surrogates in UTF-16)
# and characters beyond U+FFFF (sorted before them).
_TRICKY = '\x00\x01\x08\x09\x0a\x0c\x0d\x1f "\\/\x7f\x80\u00e9\u2028\u2029\ue000\ufb33\uffff'
tricky_text = st.text(
    alphabet=st.sampled_from(_TRICKY) | st.characters(codec="utf-8") | st.just("\U0001f600"),
    max_size=6,
)
numbers = (
    st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats()
    | st.sampled_from([0.0, -0.0, 1e21, 1e-7, 1e16, 2.0**53, 5e-324, 1.7976931348623157e308])
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
)
any_json = st.recursive(
    st.none() | st.booleans() | numbers | tricky_text,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(tricky_text, children, max_size=5)
        | st.tuples(children, children)
    ),
    max_leaves=30,
)


def _reference_or_error(value: Any) -> bytes | str:
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except Exception:
        return "refused"


def _ours_or_error(value: Any) -> bytes | str:
    try:
        return canonical_json(value)
    except DigestError:
        return "refused"


@settings(max_examples=400, deadline=None)
@given(value=any_json)
def test_canonical_json_is_the_reference_implementation(value: Any) -> None:
    assert _ours_or_error(value) == _reference_or_error(value)


@settings(max_examples=300, deadline=None)
@given(value=any_json)
def test_parsed_json_is_written_as_the_reference_writes_it(value: Any) -> None:
    """JSON text read by `parse_json` (numbers kept as written) and written by
    `canonical_of_parsed`: the reference's bytes for the same text read by `json`."""
    from registry.canonical import canonical_of_parsed, parse_json

    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN and infinities are not JSON
        return
    parsed, _floats = parse_json(text.encode())
    try:
        ours: bytes | str = canonical_of_parsed(parsed)
    except DigestError:
        ours = "refused"
    assert ours == _reference_or_error(json.loads(text))


def test_every_bmp_character_is_escaped_as_the_reference_escapes_it() -> None:
    import rfc8785

    text = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000)
    assert canonical_json(text) == rfc8785.dumps(text)
    assert canonical_json({text: 1, "a": text}) == rfc8785.dumps({text: 1, "a": text})


@pytest.mark.parametrize(
    "value",
    [
        {"\U0001f600": 1, "\ufb33": 2},  # code point order and UTF-16 order disagree
        {"n": 2**53},  # refused by the reference
        {"n": -(2**53) + 1, "m": [9007199254740991]},
        {"s": "9007199254740993", "t": ":12345678901234567,"},  # digits in strings
        [1e16, 123456789012345680000.0],  # long integral floats
        {"sha": "sha256:8294131810391404099c64a67e474"},
    ],
)
def test_edges_of_the_fast_path(value: Any) -> None:
    assert _ours_or_error(value) == _reference_or_error(value)
