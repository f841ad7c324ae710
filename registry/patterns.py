"""Regular expressions of published schemas: checked once, matched in linear time.

    check_pattern(r"^[a-z]+$")          # None, or PatternError naming the problem
    search(r"^[a-z]+$", "abc")          # True: RE2, compiled once (bounded cache)
    cls = linear_validator(Draft202012Validator)   # jsonschema matching with RE2

A `pattern` (or a `patternProperties` key) of a JSON Schema is a regular
expression run against strings that callers control: tool-call arguments at
the gate, defaults and examples in the compatibility engine. Python's `re`
backtracks, so `^(a+)+$` against 40 characters of `a` and a `!` takes hours.
Matching here runs on RE2 (the `google-re2` package), whose automata run in
time linear in the text whatever the pattern; the patterns it cannot run that
way are refused when a schema is published, with the feature named:

* backreferences (`\\1`, `(?P=name)`), lookahead (`(?=`, `(?!`), lookbehind
  (`(?<=`, `(?<!`), conditionals (`(?(1)a|b)`), atomic groups (`(?>`) and
  possessive quantifiers (`a++`);
* anything else RE2 refuses (verbose mode `(?x)`, counted repetitions over
  1000, programs over its memory budget), with RE2's own message.

A pattern must first compile under Python's `re`: that has been the
registry's reference for "a valid ECMA-262-ish regular expression" (the
meta-schema's `format: regex` check uses it too). Python spellings RE2 writes
differently are translated before RE2 compiles them: `\\uXXXX` and
`\\UXXXXXXXX` become `\\x{...}`, `\\Z` becomes `\\z`, `{,n}` becomes `{0,n}`,
`[\\b]` (backspace) becomes `\\x08`. RE2's `\\d`, `\\w`, `\\s` and `$` are
ECMA-262's (ASCII classes, `$` only at the very end), not Python's.
"""

from __future__ import annotations

import functools
import importlib
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

import re2  # type: ignore[import-untyped, unused-ignore]
from jsonschema import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing.jsonschema import lookup_recursive_ref

_extend: Any = extend  # untyped in types-jsonschema

__all__ = [
    "CACHE_SIZE",
    "MAX_PATTERN_LENGTH",
    "PatternError",
    "check_pattern",
    "linear_validator",
    "search",
]

# Compiled RE2 programs kept for `search` (least recently used dropped first).
CACHE_SIZE = 256
# Longer patterns are refused before any engine parses them (Python's parser
# is recursive, so nesting is bounded separately: see `_python_check`).
MAX_PATTERN_LENGTH = 8192
# RE2's memory budget per program (its default is 8 MiB); past it, compiling
# fails ("pattern too large") and matching falls back to a slower linear scan.
_MAX_MEM = 4 * 1024 * 1024

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print each refusal on stderr
_OPTIONS.max_mem = _MAX_MEM

# `re._parser` (sre_parse) is private but stable through 3.11-3.13; imported by
# name because `sre_parse` warns and typeshed lacks `re._parser`.
_parser: Any = importlib.import_module("re._parser")
_constants: Any = importlib.import_module("re._constants")

_FEATURES: dict[Any, str] = {
    _constants.GROUPREF: "a backreference",
    _constants.GROUPREF_EXISTS: "a conditional group (?(...)...)",
    _constants.ATOMIC_GROUP: "an atomic group (?>...)",
    _constants.POSSESSIVE_REPEAT: "a possessive quantifier",
}
_MAX_MESSAGE = 120


class PatternError(ValueError):
    """A pattern the registry refuses; `message` says why in one line."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def check_pattern(pattern: str) -> None:
    """Raise PatternError unless `pattern` compiles under Python's `re` and runs on RE2."""
    problem = _problem(pattern)
    if problem is not None:
        raise PatternError(problem)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema `pattern`
    semantics: unanchored), in time linear in `text`. PatternError for a
    pattern `check_pattern` refuses."""
    return _compiled(pattern).search(text) is not None


@functools.lru_cache(maxsize=1024)
def _problem(pattern: str) -> str | None:
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"pattern is longer than {MAX_PATTERN_LENGTH} characters"
    problem = _python_check(pattern)
    if problem is not None:
        return problem
    try:
        _compiled(pattern)
    except PatternError as error:
        return error.message
    return None


def _python_check(pattern: str) -> str | None:
    try:
        re.compile(pattern)
        tree = _parser.parse(pattern)
    except re.error as error:
        return f"pattern {_show(pattern)} does not compile: {error}"
    except RecursionError:
        return f"pattern {_show(pattern)} nests groups too deeply"
    feature = _unsupported_feature(tree)
    if feature is not None:
        return (
            f"pattern {_show(pattern)} uses {feature}, which cannot be matched in linear "
            "time; the registry matches patterns with RE2 (no backreferences or lookaround)"
        )
    return None


def _unsupported_feature(tree: Any) -> str | None:
    """The first construct of a parsed pattern that RE2 cannot run, or None."""
    stack: list[Any] = [tree]
    while stack:
        for op, argument in stack.pop():
            if op in _FEATURES:
                return _FEATURES[op]
            if op in (_constants.ASSERT, _constants.ASSERT_NOT):
                direction = argument[0]
                kind = "lookahead" if direction == 1 else "lookbehind"
                negative = "negative " if op == _constants.ASSERT_NOT else ""
                return f"a {negative}{kind} assertion"
            stack.extend(_children(op, argument))
    return None


def _children(op: Any, argument: Any) -> Iterator[Any]:
    if op == _constants.SUBPATTERN:
        yield argument[-1]
    elif op == _constants.BRANCH:
        yield from argument[1]
    elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT):
        yield argument[2]


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled(pattern: str) -> Any:
    translated = _to_re2(pattern)
    try:
        return re2.compile(translated, _OPTIONS)
    except re2.error as error:
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(
            f"pattern {_show(pattern)} is not supported by RE2, the linear-time engine "
            f"the registry matches patterns with: {detail}"
        ) from None
    except (UnicodeError, ValueError, TypeError) as error:
        raise PatternError(f"pattern {_show(pattern)} cannot be compiled by RE2: {error}") from None


_HEX = frozenset("0123456789abcdefABCDEF")


def _to_re2(pattern: str) -> str:
    r"""Python's spellings of the same regular expression in RE2's syntax
    (`\uXXXX`, `\UXXXXXXXX`, `\N{NAME}`, `\Z`, `{,n}`, `[\b]`)."""
    if "\\" not in pattern and "{," not in pattern:
        return pattern
    out: list[str] = []
    index, length, in_class = 0, len(pattern), False
    while index < length:
        char = pattern[index]
        if char == "\\" and index + 1 < length:
            step, text = _escape(pattern, index, in_class)
            out.append(text)
            index += step
        elif in_class:
            in_class = char != "]"
            out.append(char)
            index += 1
        elif char == "[":
            # `[`, an optional `^`, and a `]` right after them is a literal `]`
            end = index + 1
            if pattern.startswith("^", end):
                end += 1
            if pattern.startswith("]", end):
                end += 1
            out.append(pattern[index:end])
            index, in_class = end, True
        elif pattern.startswith("{,", index):
            close = pattern.find("}", index)
            count = pattern[index + 2 : close] if close != -1 else ""
            if count.isdigit():
                out.append("{0," + count + "}")
                index = close + 1
            else:
                out.append(char)
                index += 1
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _escape(pattern: str, index: int, in_class: bool) -> tuple[int, str]:
    """The length of the escape at `index` and its RE2 spelling."""
    escaped = pattern[index + 1]
    width = {"u": 4, "U": 8}.get(escaped)
    if width is not None:
        digits = pattern[index + 2 : index + 2 + width]
        if len(digits) == width and set(digits) <= _HEX:
            return 2 + width, f"\\x{{{digits}}}"
    if escaped == "N" and pattern.startswith("{", index + 2):
        end = pattern.find("}", index + 3)
        if end != -1:
            try:
                code = ord(unicodedata.lookup(pattern[index + 3 : end]))
            except KeyError:
                pass
            else:
                return end + 1 - index, f"\\x{{{code:X}}}"
    if escaped == "Z" and not in_class:
        return 2, "\\z"
    if escaped == "b" and in_class:
        return 2, "\\x08"
    return 2, pattern[index : index + 2]


def _show(pattern: str) -> str:
    text = repr(pattern)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


# -- jsonschema matching with RE2 ----------------------------------------------------


def _matches(pattern: str, text: str) -> bool:
    try:
        return search(pattern, text)
    except PatternError:
        return False  # a schema published before patterns were checked: no match


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if (
        validator.is_type(instance, "string")
        and isinstance(pattern, str)
        and not _matches(pattern, instance)
    ):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Iterator[str]:
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    for key in instance:
        if key not in properties and not any(_matches(p, key) for p in patterns):
            yield key


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = set(_additional(instance, schema))
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            names = sorted(extras, key=str)
            verb = "was" if len(names) == 1 else "were"
            yield ValidationError(
                "Additional properties are not allowed "
                f"({', '.join(repr(n) for n in names)} {verb} unexpected)"
            )


def _is_valid(errors: Iterator[Any]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: Any, schema: Any) -> list[str]:
    """jsonschema's `find_evaluated_property_keys_by_schema` (2020-12 and
    2019-09 both), with `patternProperties` matched by RE2."""
    if validator.is_type(schema, "boolean"):
        return []
    keys: list[str] = []
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if ref is not None:
            resolved = validator._resolver.lookup(ref)
            evolved = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys += _evaluated_keys(evolved, instance, resolved.contents)
    if "$recursiveRef" in schema:
        resolved = lookup_recursive_ref(validator._resolver)
        evolved = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
        keys += _evaluated_keys(evolved, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys += properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys += (k for k, v in instance.items() if _is_valid(validator.descend(v, subschema)))
    for pattern in schema.get("patternProperties", {}):
        keys += (key for key in instance if _matches(pattern, key))
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys += _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _is_valid(validator.descend(instance, subschema)):
                keys += _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys += _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys += _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys += _evaluated_keys(validator, instance, schema["else"])
    return keys


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = set(_evaluated_keys(validator, instance, schema))
    failed = [
        key
        for key in instance
        if key not in evaluated
        and not _is_valid(validator.descend(instance[key], unevaluated, path=key, schema_path=key))
    ]
    if failed:
        names = ", ".join(repr(k) for k in sorted(failed, key=str))
        verb = "was" if len(failed) == 1 else "were"
        if unevaluated is False:
            yield ValidationError(
                f"Unevaluated properties are not allowed ({names} {verb} unexpected)"
            )
        else:
            yield ValidationError(
                "Unevaluated properties are not valid under the given schema "
                f"({names} {verb} unevaluated and invalid)"
            )


_KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
}


@functools.cache
def linear_validator(cls: type[Validator]) -> type[Validator]:
    """`cls` (a jsonschema validator class) with every regular expression of
    the schema matched by RE2: `pattern`, `patternProperties`, and the property
    names `additionalProperties` and `unevaluatedProperties` let through. The
    `format` checker is the class's own (a `regex` format still uses `re`)."""
    keywords = {name: fn for name, fn in _KEYWORDS.items() if name in cls.VALIDATORS}
    extended: type[Validator] = _extend(cls, keywords)
    extended.linear_base = cls  # type: ignore[attr-defined]  # the dialect it extends
    return extended
