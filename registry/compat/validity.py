"""A witness's validity, checked without building a python-jsonschema validator.

    check = plain_checker(schema, encoded)   # None: a dialect it does not read
    check(value)                             # True / False, or raises Unsupported

The witness search (witnesses.py) confirms each candidate against both
versions; python-jsonschema takes 20-70 us a check (a validator evolved per
subschema the value reaches), most of a breaking pair's time. This check
answers as the engine's python-jsonschema validator (`witnesses._validator`:
the schema's dialect, `pattern` matched by RE2, a format checker) answers, for
the keywords whose meaning is plain; it interprets the raw schema along the
value, so it costs nothing to make and a few microseconds a value.

Read alike: `type`, `enum`, `const` (python-jsonschema's equality: `1 == 1.0`,
`true != 1`), `properties`, `required`, `additionalProperties` (beside
`properties` only), `minProperties`/`maxProperties`, `items` (one schema for
every item, no `prefixItems`), `minItems`/`maxItems`, `minLength`/`maxLength`
(code points), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`
(numbers), `pattern` (RE2, as `registry.patterns` matches), `format` (the same
`FormatChecker`), `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else`,
`dependentRequired`, `dependentSchemas`, `propertyNames`, `true`/`false`, and
`$ref` to a JSON Pointer of the same document in 2019-09 and 2020-12 where
nothing in it sets a base or an anchor (`$id`, `$anchor`, dynamic or
recursive references). Keywords the dialect does not define are annotations,
as for python-jsonschema. Dialects: 2020-12 (also for a schema without
`$schema`), 2019-09, draft 7 and draft 6, which type numbers alike (an
integral float is an integer).

Anything else the value reaches (another keyword the dialect defines, a
keyword's value of an unexpected type, a `$ref` elsewhere, nesting past 128)
raises `Unsupported`, and the caller asks python-jsonschema. Keywords are
checked in the schema's order and the check stops at the first failure, as
`is_valid` does. tests/test_validity.py compares the two on generated schemas
and values and on the corpus's witnesses.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any

from jsonschema import FormatChecker
from jsonschema.protocols import Validator
from jsonschema.validators import (
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
    validator_for,
)

from registry.compat.schema import local_target
from registry.patterns import PatternError, search

__all__ = ["Unsupported", "plain_checker"]

MAX_NESTING = 128


class Unsupported(Exception):
    """The value reached something this check does not read: python-jsonschema decides."""


# Dialects and the keywords each defines (what python-jsonschema evaluates).
_DIALECTS: dict[type[Validator], frozenset[str]] = {
    cls: frozenset(cls.VALIDATORS)
    for cls in (Draft202012Validator, Draft201909Validator, Draft7Validator, Draft6Validator)
}
_REFERENCING = frozenset({Draft202012Validator, Draft201909Validator})
# Where any of these appears, a `$ref` may resolve other than by JSON Pointer.
_BASES = (b'"$id"', b'"$anchor"', b'"$dynamicAnchor"', b'"$recursiveAnchor"')
_FORMATS = FormatChecker()


def plain_checker(
    schema: Any,
    encoded: bytes | None,
    dialect: type[Validator] | None = None,
    *,
    formats: bool = True,
) -> Callable[[Any], bool] | None:
    """`is_valid` of `schema` as the witness search's python-jsonschema
    validator answers it (the value as a JSON parser returns it), raising
    `Unsupported` where it does not read alike; None for a dialect other
    than 2020-12, 2019-09, 7 and 6. `dialect`: the validator class, where
    the schema's own `$schema` does not say (a subschema); without
    `formats`, `format` asserts nothing (a validator made without a checker)."""
    cls = dialect or validator_for(schema, default=Draft202012Validator)
    keywords = _DIALECTS.get(cls)
    if keywords is None:
        return None
    if not formats:
        keywords = keywords - {"format"}
    refs = (  # (where there is no `$ref`, nothing to resolve: no need to look further)
        cls in _REFERENCING
        and encoded is not None
        and b'"$ref"' in encoded
        and not any(marker in encoded for marker in _BASES)
    )
    return _Check(schema, keywords, refs).valid


class _Check:
    __slots__ = ("defined", "document", "refs")

    def __init__(self, document: Any, defined: frozenset[str], refs: bool) -> None:
        self.document = document
        self.defined = defined
        self.refs = refs

    def valid(self, value: Any) -> bool:
        return self.check(self.document, value, 0)

    def check(self, schema: Any, value: Any, depth: int) -> bool:
        if schema is True:
            return True
        if schema is False:
            return False
        if type(schema) is not dict or depth > MAX_NESTING:
            raise Unsupported
        defined = self.defined
        for key, argument in schema.items():
            if key not in defined:
                continue  # an annotation, or a keyword of another dialect
            rule = _RULES.get(key)
            if rule is None:
                raise Unsupported
            if not rule(self, argument, value, schema, depth + 1):
                return False
        return True


# -- types -----------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


def _is_type(value: Any, name: Any) -> bool:
    """python-jsonschema's draft 6+ type checker on JSON values."""
    kind = type(value)
    if name == "string":
        return kind is str
    if name == "object":
        return kind is dict
    if name == "array":
        return kind is list
    if name == "integer":
        return kind is int or (kind is float and value.is_integer())
    if name == "number":
        return kind is int or kind is float
    if name == "boolean":
        return kind is bool
    if name == "null":
        return value is None
    raise Unsupported  # an unknown type: python-jsonschema raises


def _type(check: _Check, names: Any, value: Any, schema: Any, depth: int) -> bool:
    if type(names) is str:
        return _is_type(value, names)
    if type(names) is not list:
        raise Unsupported
    return any(_is_type(value, name) for name in names)


# -- values ------------------------------------------------------------------------

_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value


def equal(one: Any, two: Any) -> bool:
    """python-jsonschema's equality of JSON values (`1 == 1.0`, `true != 1`)."""
    if one is two:
        return True
    if type(one) is str or type(two) is str:
        return bool(one == two)
    if type(one) is list and type(two) is list:
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if type(one) is dict and type(two) is dict:
        return one.keys() == two.keys() and all(equal(one[key], two[key]) for key in one)
    if type(one) in (list, dict) or type(two) in (list, dict):
        return False
    return bool(_unbool(one) == _unbool(two))


def _enum(check: _Check, values: Any, value: Any, schema: Any, depth: int) -> bool:
    if type(values) is not list:
        raise Unsupported
    if type(value) is str:
        return value in values  # (a string equals only an equal string)
    return any(equal(each, value) for each in values)


def _const(check: _Check, expected: Any, value: Any, schema: Any, depth: int) -> bool:
    return equal(value, expected)


# -- objects -----------------------------------------------------------------------


def _properties(check: _Check, declared: Any, value: Any, schema: Any, depth: int) -> bool:
    if type(declared) is not dict:
        raise Unsupported
    if type(value) is not dict:
        return True
    if len(value) < len(declared):  # (the order witnesses._by_instance visits them in)
        for name, item in value.items():
            if name in declared and not check.check(declared[name], item, depth):
                return False
        return True
    for name, subschema in declared.items():
        if name in value and not check.check(subschema, value[name], depth):
            return False
    return True


def _required(check: _Check, names: Any, value: Any, schema: Any, depth: int) -> bool:
    if type(names) is not list:
        raise Unsupported
    return type(value) is not dict or all(name in value for name in names)


def _additional(check: _Check, extra: Any, value: Any, schema: Any, depth: int) -> bool:
    if "patternProperties" in schema:
        raise Unsupported
    if type(value) is not dict:
        return True
    declared = schema.get("properties", {})
    if type(declared) is not dict:
        raise Unsupported
    if extra is True:
        return True
    if extra is False:
        return all(name in declared for name in value)
    if type(extra) is not dict:
        raise Unsupported
    return all(
        check.check(extra, item, depth) for name, item in value.items() if name not in declared
    )


def _count(keyword: str, measures: type[Sized], bigger: bool) -> Callable[..., bool]:
    """`minProperties` and the like: the size of a value of one type, bounded."""

    def rule(check: _Check, bound: Any, value: Any, schema: Any, depth: int) -> bool:
        if not _is_number(bound):
            raise Unsupported
        if type(value) is not measures:
            return True
        size = len(value)  # (a dict, list or str: `measures`)
        # (python-jsonschema's comparisons, negated: a NaN bound refuses nothing)
        return not size < bound if bigger else not size > bound

    rule.__name__ = keyword
    return rule


def _dependencies(argument: Any, value: Any) -> dict[str, Any] | None:
    """A `dependent*` keyword's map where `value` is an object (None: nothing to check)."""
    if type(argument) is not dict:
        raise Unsupported
    return argument if type(value) is dict else None


def _dependent_required(check: _Check, argument: Any, value: Any, schema: Any, depth: int) -> bool:
    needs = _dependencies(argument, value)
    for name, names in (needs or {}).items():
        if type(names) is not list:
            raise Unsupported
        if name in value and not all(each in value for each in names):
            return False
    return True


def _dependent_schemas(check: _Check, argument: Any, value: Any, schema: Any, depth: int) -> bool:
    needs = _dependencies(argument, value)
    return needs is None or all(
        check.check(subschema, value, depth) for name, subschema in needs.items() if name in value
    )


def _property_names(check: _Check, names: Any, value: Any, schema: Any, depth: int) -> bool:
    return type(value) is not dict or all(check.check(names, name, depth) for name in value)


# -- arrays, strings, numbers ---------------------------------------------------------


def _items(check: _Check, items: Any, value: Any, schema: Any, depth: int) -> bool:
    if "prefixItems" in schema or type(items) is list:
        raise Unsupported  # (a tuple form, in either dialect)
    if type(value) is not list:
        return True
    return all(check.check(items, item, depth) for item in value)


def _pattern(check: _Check, pattern: Any, value: Any, schema: Any, depth: int) -> bool:
    if type(pattern) is not str:
        raise Unsupported
    if type(value) is not str:
        return True
    try:
        return search(pattern, value)
    except PatternError:
        return False  # as registry.patterns matches: a pattern RE2 refuses matches nothing


def _format(check: _Check, name: Any, value: Any, schema: Any, depth: int) -> bool:
    try:
        return _FORMATS.conforms(value, name)
    except Exception:  # raised by a format's own check: python-jsonschema raises it too
        raise Unsupported from None


def _bound(keyword: str) -> Callable[..., bool]:
    def rule(check: _Check, bound: Any, value: Any, schema: Any, depth: int) -> bool:
        if not _is_number(bound):
            raise Unsupported
        if not _is_number(value):
            return True
        # (python-jsonschema's comparisons, negated: NaN fails none of them)
        if keyword == "minimum":
            return not value < bound
        if keyword == "maximum":
            return not value > bound
        if keyword == "exclusiveMinimum":
            return not value <= bound
        return not value >= bound

    rule.__name__ = keyword
    return rule


# -- applicators ------------------------------------------------------------------------


def _branches(schemas: Any) -> list[Any]:
    if type(schemas) is not list or not schemas:
        raise Unsupported
    return schemas


def _any_of(check: _Check, schemas: Any, value: Any, schema: Any, depth: int) -> bool:
    return any(check.check(branch, value, depth) for branch in _branches(schemas))


def _all_of(check: _Check, schemas: Any, value: Any, schema: Any, depth: int) -> bool:
    return all(check.check(branch, value, depth) for branch in _branches(schemas))


def _one_of(check: _Check, schemas: Any, value: Any, schema: Any, depth: int) -> bool:
    found = 0
    for branch in _branches(schemas):
        if check.check(branch, value, depth):
            found += 1
            if found > 1:
                return False
    return found == 1


def _not(check: _Check, negated: Any, value: Any, schema: Any, depth: int) -> bool:
    return not check.check(negated, value, depth)


def _if(check: _Check, condition: Any, value: Any, schema: Any, depth: int) -> bool:
    if check.check(condition, value, depth):
        return "then" not in schema or check.check(schema["then"], value, depth)
    return "else" not in schema or check.check(schema["else"], value, depth)


def _ref(check: _Check, ref: Any, value: Any, schema: Any, depth: int) -> bool:
    if not check.refs or type(ref) is not str or "%" in ref:
        raise Unsupported
    found = local_target(check.document, ref)
    if found is None:
        raise Unsupported  # python-jsonschema cannot resolve it either
    return check.check(found[0], value, depth)


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_SIZES: dict[str, type[Sized]] = {
    "minProperties": dict,
    "maxProperties": dict,
    "minItems": list,
    "maxItems": list,
    "minLength": str,
    "maxLength": str,
}
_RULES: dict[str, Callable[[_Check, Any, Any, Any, int], bool]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "dependentRequired": _dependent_required,
    "dependentSchemas": _dependent_schemas,
    "propertyNames": _property_names,
    "items": _items,
    "pattern": _pattern,
    "format": _format,
    **{keyword: _bound(keyword) for keyword in _BOUNDS},
    **{
        keyword: _count(keyword, measures, bigger=keyword.startswith("min"))
        for keyword, measures in _SIZES.items()
    },
    "anyOf": _any_of,
    "allOf": _all_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
}
