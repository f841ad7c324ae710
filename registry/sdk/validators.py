"""The gate's validators: jsonschema-rs where it provably agrees, python-jsonschema otherwise.

    python = Draft202012Validator(schema)          # always built: the reference
    validator = compile_validator(schema, python)  # picks the engine, once per schema
    validator.is_valid(arguments)                  # the hot path
    validator.explain(arguments, 10)               # [] or the errors of a refusal

python-jsonschema is the reference: its verdict is the gate's decision. A
refusal's errors are listed by the engine that ran (jsonschema-rs does it in a
few microseconds, python-jsonschema in tens); both name the same instance
paths, keywords and schema paths (tests/sdk/test_validators.py), in their own
words. jsonschema-rs (PyPI `jsonschema-rs`, an optional
import: without it every schema runs on python-jsonschema) answers the accepted
call 50 to 100 times faster (bench/gate_bench.py: 0.2 us against 14 us on the
seed tool). The compiled engine is used for a schema only where the two are
known to agree, decided per schema when the toolset is compiled:

Rule. A schema runs on python-jsonschema alone when any of these holds
(`fallback_reason` names the first one found), else on jsonschema-rs:

1. jsonschema-rs is not installed, or it refuses to compile the schema.
2. The dialect is not draft 4, 6, 7, 2019-09 or 2020-12, or `$schema` names
   another meta-schema (a custom vocabulary).
3. A `pattern` outside the portable regex subset below, or any
   `patternProperties` (its keys choose which subschema a property meets, so a
   dialect difference flips a verdict either way). Python's `re` and the Rust
   engine differ on `$` (Python's also matches before a final newline), on
   `\\d`, `\\w`, `\\s`, `\\b` and their negations (Unicode in Python, ASCII or
   ECMA-262 in jsonschema-rs: `\\s` matches U+FEFF there, not here), on
   possessive quantifiers, inline flags, named groups, lookaround,
   backreferences, nested classes and class set operations (`&&`, `--`, `~~`).
   Portable: literal characters, escaped punctuation, `\\t \\n \\r \\f`, `.`, `^`,
   classes (negated or not) of literals and literal ranges, groups `(...)` and
   `(?:...)`, `|`, and the quantifiers `* + ? {n} {n,} {n,m}`, lazy or not.
   Real tool schemas often anchor with `$`: those run on python-jsonschema.
4. `multipleOf` (float division in python-jsonschema, exact arithmetic in
   jsonschema-rs: `0.07` is no multiple of `0.01` for the first, is for the second).
5. `contentEncoding`, `contentMediaType` or `contentSchema` (asserted by
   jsonschema-rs under drafts 6 and 7, annotations for python-jsonschema).
6. A `$ref` that is not a fragment of this document (`#...`), or any
   `$dynamicRef`, `$recursiveRef`, `$dynamicAnchor`, `$recursiveAnchor`,
   `$anchor`, or an `$id` below the root (resolution rules of two
   implementations, and jsonschema-rs would fetch a remote document).

The whole document is walked, `$defs` and unknown keywords included, so a
`$ref` cannot reach a subschema the rule did not see. `format` needs no rule:
both engines treat it as an annotation (python-jsonschema is built without a
format checker, jsonschema-rs with `validate_formats=False`).

On the compiled path, an instance jsonschema-rs finds valid is accepted; one it
finds invalid, or cannot read (a lone surrogate, a non-string key), goes to
python-jsonschema, whose verdict stands: a disagreement can only ever make the
gate re-check, never accept what python-jsonschema refuses, provided the
compiled engine never accepts what the reference refuses. That is what
tests/sdk/test_validators.py checks on the corpus (every inputSchema of
github-mcp-server, open and strict) and on each rule above. Instances are JSON
values as a JSON parser returns them (dict, list, str, int, float, bool, None):
jsonschema-rs reads a tuple as an array where python-jsonschema does not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Any

from registry.pointers import join
from registry.sdk._logging import get_logger

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "FAST_ENGINE",
    "PYTHON_ENGINE",
    "SchemaValidator",
    "compile_validator",
    "fallback_reason",
]

PYTHON_ENGINE = "python-jsonschema"
FAST_ENGINE = "jsonschema-rs"

_log = get_logger("registry.sdk.validators")


# The dialects both engines read alike: the class name (the same in python-jsonschema
# and jsonschema-rs) and the `$schema` URIs that name it.
_DIALECT_URIS = {
    "Draft4Validator": (
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-04/schema",
    ),
    "Draft6Validator": (
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-06/schema",
    ),
    "Draft7Validator": (
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
    ),
    "Draft201909Validator": ("https://json-schema.org/draft/2019-09/schema",),
    "Draft202012Validator": ("https://json-schema.org/draft/2020-12/schema",),
}


@functools.cache
def _dialects() -> dict[type[Any], tuple[str, frozenset[str]]]:
    """python-jsonschema class -> (jsonschema-rs class name, the dialect URIs both read
    alike), built by the first compile."""
    import jsonschema

    return {
        getattr(jsonschema, name): (name, frozenset(uris)) for name, uris in _DIALECT_URIS.items()
    }


@functools.cache
def _compiled_engine() -> Any:
    """The jsonschema_rs module, imported by the first compile (the gate's import
    loads neither engine); None where it is not installed."""
    try:
        import jsonschema_rs
    except ImportError:  # pragma: no cover - platforms without a wheel
        return None
    return jsonschema_rs


# keywords whose value is a map of names to subschemas
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
# keywords whose value is data, not a schema: never walked
_DATA = frozenset(
    {
        "enum",
        "const",
        "default",
        "examples",
        "required",
        "dependentRequired",
        "type",
        "title",
        "description",
        "$comment",
        "format",
        "$schema",
        "$vocabulary",
    }
)
_UNREFERENCED = (
    "$dynamicRef",
    "$recursiveRef",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$anchor",
)
_CONTENT = ("contentEncoding", "contentMediaType", "contentSchema")


class SchemaValidator:
    """One compiled schema: `is_valid` on the chosen engine (the reference's verdict
    wherever the compiled one refuses), `explain` for the errors of a refusal.

    `python` is the python-jsonschema validator, `compiled` the jsonschema-rs
    one (None on python-jsonschema alone, `fallback_reason` then says why).
    """

    __slots__ = ("compiled", "engine", "fallback_reason", "is_valid", "python")

    def __init__(
        self,
        python: Validator,
        compiled: Any,
        is_valid: Callable[[Any], bool],
        engine: str,
        fallback_reason: str | None,
    ) -> None:
        self.python = python
        self.compiled = compiled
        self.is_valid = is_valid
        self.engine = engine
        self.fallback_reason = fallback_reason

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        return self.python.iter_errors(instance)

    def explain(self, instance: Any, limit: int) -> list[dict[str, Any]]:
        """[] when `instance` is valid (the verdict `is_valid` gives), else up to
        `limit` errors as `{path, keyword, message, schemaPath[, unexpected]}`.

        The verdict is python-jsonschema's wherever jsonschema-rs refuses; the
        errors come from the engine that ran (jsonschema-rs lists them in a few
        microseconds where python-jsonschema takes tens), so a refusal costs one
        pass of each engine at most.
        """
        compiled = self.compiled
        if compiled is not None:
            try:
                if compiled.is_valid(instance):
                    return []
                if self.is_valid(instance):  # the reference accepts: its verdict stands
                    return []
                details = [_rs_detail(e) for e in islice(compiled.iter_errors(instance), limit)]
                if not any(_unnamed(d) for d in details):
                    return details
                # jsonschema-rs reports `additionalProperties: false` without
                # `properties` as a false schema, naming no property: the reference does
            except Exception:  # not data it can read: the reference explains
                pass
        return [_python_detail(e) for e in islice(self.python.iter_errors(instance), limit)]

    def matches(self, instance: Any) -> bool:
        """A verdict that only explains (the gate's inference of a refused call's
        contract): the compiled engine's alone where it runs, its refusals not
        re-checked. Never use it to accept a call: that is `is_valid`."""
        if self.compiled is not None:
            try:
                return bool(self.compiled.is_valid(instance))
            except Exception:  # not data it can read: the reference decides
                pass
        return bool(self.python.is_valid(instance))

    def __repr__(self) -> str:
        why = f", fallback: {self.fallback_reason}" if self.fallback_reason else ""
        return f"<SchemaValidator {self.engine}{why}>"


def _python_detail(error: ValidationError) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": join(error.absolute_path),
        "keyword": error.validator,
        "message": error.message,
        "schemaPath": join(error.absolute_schema_path),
    }
    schema, instance = error.schema, error.instance
    if (
        error.validator == "additionalProperties"
        and isinstance(schema, dict)
        and isinstance(instance, dict)
    ):
        known = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        out["unexpected"] = sorted(
            key
            for key in instance
            if key not in known and not any(re.search(p, key) for p in patterns)
        )
    return out


def _unnamed(detail: Mapping[str, Any]) -> bool:
    """An undeclared-property error that does not name the properties."""
    return detail["keyword"] in _UNDECLARED and not detail.get("unexpected")


_UNDECLARED = ("additionalProperties", "unevaluatedProperties")


def _rs_detail(error: Any) -> dict[str, Any]:
    schema_path = list(error.schema_path)
    keyword = schema_path[-1] if schema_path and isinstance(schema_path[-1], str) else ""
    out: dict[str, Any] = {
        "path": join(error.instance_path),
        "keyword": keyword,
        "message": error.message,
        "schemaPath": join(schema_path),
    }
    unexpected = getattr(error.kind, "unexpected", None)
    if keyword in _UNDECLARED and unexpected:
        out["unexpected"] = sorted(str(name) for name in unexpected)
    return out


def compile_validator(schema: Any, python: Validator, *, fast: bool = True) -> SchemaValidator:
    """Wrap `python` (the reference, built on `schema`) with the fastest engine that agrees.

    `fast=False` keeps python-jsonschema alone (benchmarks, or to rule the
    compiled engine out while chasing a suspected disagreement).
    """
    reason = fallback_reason(schema, type(python)) if fast else "disabled"
    compiled: Any = None
    if reason is None:
        engine = _compiled_engine()
        assert engine is not None
        cls = getattr(engine, _dialects()[_dialect_class(type(python))][0])
        try:
            compiled = cls(schema, validate_formats=False)
        except Exception as exc:  # its own meta-schema check or regex engine said no
            reason = f"jsonschema-rs refuses the schema: {str(exc).splitlines()[0]}"
    if compiled is None:
        return SchemaValidator(python, None, python.is_valid, PYTHON_ENGINE, reason)
    return SchemaValidator(
        python, compiled, _confirmed(compiled.is_valid, python.is_valid), FAST_ENGINE, None
    )


def _confirmed(
    fast: Callable[[Any], bool], reference: Callable[[Any], bool]
) -> Callable[[Any], bool]:
    """Accept on the compiled engine's word; anything else is the reference's call."""
    warned = False

    def is_valid(instance: Any) -> bool:
        nonlocal warned
        try:
            if fast(instance):
                return True
        except Exception:  # not data it can read (lone surrogate, non-string key): no verdict
            return reference(instance)
        valid = reference(instance)
        if valid and not warned:
            warned = True
            _log.warning(
                "gate.validator_disagreement",
                engine=FAST_ENGINE,
                detail="jsonschema-rs refused an instance python-jsonschema accepts; "
                "python-jsonschema's verdict stands",
            )
        return valid

    return is_valid


# ---------------------------------------------------------------- the rule


def _dialect_class(python_cls: type[Any]) -> type[Any]:
    """The jsonschema dialect class (through `registry.patterns.linear_validator`)."""
    base: type[Any] = getattr(python_cls, "linear_base", python_cls)
    return base


def fallback_reason(schema: Any, python_cls: type[Any]) -> str | None:
    """Why `schema` must run on python-jsonschema alone, or None if jsonschema-rs agrees."""
    if _compiled_engine() is None:
        return "jsonschema-rs is not installed"
    python_cls = _dialect_class(python_cls)
    dialect = _dialects().get(python_cls)
    if dialect is None:
        return f"{python_cls.__name__} has no jsonschema-rs counterpart"
    if isinstance(schema, dict) and "$schema" in schema and schema["$schema"] not in dialect[1]:
        return f"$schema {schema['$schema']!r} is not a standard dialect"
    return _walk(schema, root=True)


def _walk(node: Any, *, root: bool = False) -> str | None:
    if isinstance(node, list):
        for item in node:
            found = _walk(item)
            if found:
                return found
        return None
    if not isinstance(node, dict):
        return None
    for key, value in node.items():
        found = _keyword(key, value, root)
        if found:
            return found
    return None


def _keyword(key: str, value: Any, root: bool) -> str | None:
    if key in _DATA:
        return None
    if key == "pattern":
        if isinstance(value, str) and not portable_pattern(value):
            return f"pattern {value!r} is outside the portable regex subset"
        return None
    if key == "patternProperties":
        return "patternProperties"
    if key == "multipleOf":
        return "multipleOf"
    if key in _CONTENT:
        return key
    if key in _UNREFERENCED:
        return key
    if key == "$ref":
        if not isinstance(value, str) or not value.startswith("#"):
            return f"$ref {value!r} outside this document"
        return None
    if key in ("$id", "id") and not root and isinstance(value, str):
        return f"{key} below the root"
    if key in _SCHEMA_MAPS and isinstance(value, Mapping):
        for child in value.values():
            found = _walk(child)
            if found:
                return found
        return None
    # a subschema, a list of them, or an unknown keyword a `$ref` may still reach
    return _walk(value)


_COUNTED = re.compile(r"\{[0-9]+(,[0-9]*)?\}")
_ESCAPED = frozenset("\\^$.|?*+()[]{}/-")
_CONTROL = frozenset("tnrf")


def portable_pattern(pattern: str) -> bool:
    """Whether Python's `re` and jsonschema-rs match `pattern` against the same strings."""
    i, n, depth, quantifiable = 0, len(pattern), 0, False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n or (pattern[i + 1] not in _ESCAPED and pattern[i + 1] not in _CONTROL):
                return False
            i, quantifiable = i + 2, True
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                return False
            i, quantifiable = end + 1, True
        elif c == "(":
            if pattern.startswith("(?:", i):
                i += 3
            elif pattern.startswith("(?", i):
                return False
            else:
                i += 1
            depth, quantifiable = depth + 1, False
        elif c == ")":
            if depth == 0:
                return False
            depth, i, quantifiable = depth - 1, i + 1, True
        elif c in "*+?{":
            match = _COUNTED.match(pattern, i) if c == "{" else None
            if not quantifiable or (c == "{" and match is None):
                return False
            i = match.end() if match is not None else i + 1
            if i < n and pattern[i] == "?":
                i += 1
            quantifiable = False
        elif c in "$}]":
            return False
        elif c in "^|":
            i, quantifiable = i + 1, False
        else:  # `.` or a literal
            i, quantifiable = i + 1, True
    return depth == 0


def _class_end(pattern: str, start: int) -> int:
    """Index of the `]` closing the portable class opened at `start`, or -1."""
    i, n = start + 1, len(pattern)
    if i < n and pattern[i] == "^":
        i += 1
    if i < n and pattern[i] == "]":
        return -1  # a leading `]`: literal in Python, an error or empty class elsewhere
    previous = ""
    while i < n:
        c = pattern[i]
        if c == "]":
            return i
        if c == "[":
            return -1
        if c == "\\":
            if i + 1 >= n or (pattern[i + 1] not in _ESCAPED and pattern[i + 1] not in _CONTROL):
                return -1
            i, previous = i + 2, ""
            continue
        if c in "&-~" and previous == c:
            return -1  # Rust class set operations
        i, previous = i + 1, c
    return -1
