"""JSON Schema dialects: which keywords each one defines, and how the engine reads them.

Each side of a comparison is read in its own dialect, named by the root
`$schema` (absent: 2020-12, the MCP default). Spellings that differ between
dialects become one internal model in `schema.py`: draft-04's boolean
`exclusiveMinimum`, `items` as an array with `additionalItems` (up to
2019-09) and `prefixItems` with `items` (2020-12), `dependencies` (up to
draft-07) split into `dependentRequired` and `dependentSchemas`, `id` and
`$id`, `definitions` and `$defs`.

A keyword of another dialect (`dependencies` or `id` under 2020-12, `const`
under draft-04) is read with the meaning its own dialects give it: some
validators enforce it there, and a constraint read where a validator ignores
it can only make a verdict stricter. Such a keyword is remembered as
borrowed (`Node.borrowed`): the same keyword borrowed on one side and native
on the other (a `$schema` change) is `unanalyzable`, since one validator may
ignore what the other enforces. A keyword of no supported dialect (a vendor
keyword) is kept as it is and compared for equality only: any difference is
`unanalyzable`. A keyword in `UNANALYZABLE` is defined but not analysed: a
difference is `unanalyzable` too.
`tests/test_dialects.py` checks these tables against each dialect's
meta-schema, so no keyword of a supported dialect goes unclassified.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ANNOTATIONS",
    "DEFAULT",
    "DIALECTS",
    "KNOWN",
    "UNANALYZABLE",
    "Dialect",
    "dialect_of",
    "reading",
]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str  # "draft-07", "2020-12", ...
    uri: str  # the canonical `$schema` URI
    keywords: frozenset[str]  # every keyword the dialect defines
    # up to draft-07, keywords beside `$ref` are ignored by validators
    ref_overrides_siblings: bool


# Keywords with no effect on validity: their changes are cosmetic.
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)

# Defined, but the engine does not analyse them: any difference is
# `unanalyzable` (fail closed). Conditionals depend on which branch an
# instance takes; dynamic references resolve at validation time.
UNANALYZABLE = frozenset(
    {
        "if",
        "then",
        "else",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
    }
)

_CORE_04 = {
    "$schema",
    "$ref",
    "id",
    "definitions",
    "title",
    "description",
    "default",
    "type",
    "enum",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "additionalItems",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "dependencies",
}
_DRAFT_06 = (_CORE_04 - {"id"}) | {"$id", "const", "contains", "propertyNames", "examples"}
_DRAFT_07 = _DRAFT_06 | {
    "$comment",
    "if",
    "then",
    "else",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
}
_DRAFT_2019 = (_DRAFT_07 - {"dependencies", "definitions"}) | {
    "$defs",
    "$anchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
    "minContains",
    "maxContains",
    "contentSchema",
    "deprecated",
    # still a container of definitions (`$ref` reaches it by pointer); its
    # meta-schema also lists `dependencies`, which 2019-09 validators no longer
    # enforce: read as an unknown keyword here
    "definitions",
}
_DRAFT_2020 = (_DRAFT_2019 - {"additionalItems", "$recursiveRef", "$recursiveAnchor"}) | {
    "prefixItems",
    "$dynamicRef",
    "$dynamicAnchor",
}

DIALECTS: tuple[Dialect, ...] = (
    Dialect("draft-04", "http://json-schema.org/draft-04/schema#", frozenset(_CORE_04), True),
    Dialect("draft-06", "http://json-schema.org/draft-06/schema#", frozenset(_DRAFT_06), True),
    Dialect("draft-07", "http://json-schema.org/draft-07/schema#", frozenset(_DRAFT_07), True),
    Dialect(
        "2019-09", "https://json-schema.org/draft/2019-09/schema", frozenset(_DRAFT_2019), False
    ),
    Dialect(
        "2020-12", "https://json-schema.org/draft/2020-12/schema", frozenset(_DRAFT_2020), False
    ),
)
DEFAULT = DIALECTS[-1]
# Every keyword some supported dialect defines.
KNOWN = frozenset().union(*(dialect.keywords for dialect in DIALECTS))

_BY_URI = {
    spelling: dialect
    for dialect in DIALECTS
    for spelling in {
        dialect.uri,
        dialect.uri.rstrip("#"),
        dialect.uri.replace("https://", "http://"),
        dialect.uri.rstrip("#").replace("https://", "http://"),
        dialect.uri.replace("http://", "https://"),
        dialect.uri.rstrip("#").replace("http://", "https://"),
    }
}


# How the engine reads each keyword (every keyword of `KNOWN` has one reading).
ANALYSED = "analysed"  # compared by a rule: findings name what changed
ANNOTATION = "annotation"  # cosmetic: description-changed, title-changed, ...
IDENTITY = "identity"  # names or holds schemas; no effect on which values are valid
FAIL_CLOSED = "unanalyzable"  # any difference is `unanalyzable`

_IDENTITIES = frozenset({"$schema", "$id", "id", "$anchor", "$defs", "definitions"})


def reading(dialect: Dialect, keyword: str) -> str:
    """How `keyword` is read in a schema of `dialect`: a keyword the dialect
    does not define is borrowed from the dialects that do (a difference in
    which side borrows it is `unanalyzable`); one no dialect defines is opaque."""
    if keyword not in KNOWN or keyword in UNANALYZABLE:
        return FAIL_CLOSED
    if keyword in ANNOTATIONS:
        return ANNOTATION
    if keyword in _IDENTITIES:
        return IDENTITY
    if keyword not in dialect.keywords and keyword in ("prefixItems", "additionalItems"):
        # the other array spelling is unknown here (`additionalItems` beside an
        # array `items` excepted: that older form is read under any dialect)
        return FAIL_CLOSED
    return ANALYSED


def dialect_of(uri: object) -> Dialect | None:
    """The dialect a `$schema` value names (absent: 2020-12); None for one the
    engine does not know (draft-03, a custom meta-schema), read like 2020-12
    as validators do, but never compared with another dialect."""
    if uri is None:
        return DEFAULT
    if not isinstance(uri, str):
        return None
    return _BY_URI.get(uri) or _BY_URI.get(uri + "#")
