"""The lint catalogue: what a definition says that it does not mean, or leaves unsaid.

Each rule is a function over one tool definition yielding `(pointer, message)`
pairs, registered with `@rule(name, category)`; its docstring ends with an
`Example:` line, a definition (JSON) the rule reports, which
tests/test_lint.py runs. Names are kebab-case like the engine's kinds and are
never reused once shipped.

Categories (`mcp-registry.yaml`'s `lint.use`; `correctness` and `docs` are on
when nothing is configured):

    correctness   the schema contradicts itself: a caller cannot do what it says
    docs          what the model reads to choose and call the tool is missing
    portability   allowed by the MCP spec, refused by some hosts

Pure: no I/O, no service imports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from registry.pointers import escape, unescape

__all__ = ["CATEGORIES", "DEFAULT_CATEGORIES", "RULES", "Finding", "Rule", "lint_definition"]

CATEGORIES = ("correctness", "docs", "portability")
DEFAULT_CATEGORIES = ("correctness", "docs")

Check = Callable[[dict[str, Any]], Iterator[tuple[str, str]]]


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    check: Check

    @property
    def summary(self) -> str:
        """The docstring's first paragraph, on one line."""
        return " ".join((self.check.__doc__ or "").strip().split("\n\n")[0].split())

    @property
    def example(self) -> Any:
        """The definition of the docstring's `Example:` line, parsed."""
        import json

        doc = self.check.__doc__ or ""
        return json.loads(doc.split("Example:", 1)[1].strip())


@dataclass(frozen=True)
class Finding:
    """One problem: the rule, a JSON Pointer into the definition, and what is wrong."""

    rule: str
    category: str
    pointer: str
    message: str


RULES: dict[str, Rule] = {}


def rule(name: str, category: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        assert category in CATEGORIES and name not in RULES
        RULES[name] = Rule(name, category, check)
        return check

    return register


def lint_definition(
    definition: dict[str, Any], rules: Iterator[Rule] | None = None
) -> list[Finding]:
    """Every finding of `rules` (default: all) on one definition, in rule order."""
    found: list[Finding] = []
    for chosen in rules if rules is not None else iter(RULES.values()):
        found.extend(
            Finding(chosen.name, chosen.category, pointer, message)
            for pointer, message in chosen.check(definition)
        )
    return found


# -- walking schemas --------------------------------------------------------------------

# keyword -> how its value holds schemas: one schema, a list, or a map of names to schemas
_ONE = ("additionalProperties", "unevaluatedProperties", "propertyNames", "additionalItems",
        "unevaluatedItems", "contains", "not", "if", "then", "else")  # fmt: skip
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "patternProperties", "dependentSchemas", "$defs", "definitions")


def schemas(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object schema of the input and output schemas, with its pointer, parents
    first. Written here rather than taken from the engine: the engine parses the
    keywords it compares, lint reads every schema a keyword may hold."""
    for side in ("inputSchema", "outputSchema"):
        if isinstance(definition.get(side), dict):
            yield from _walk(definition[side], f"/{side}")


def _walk(schema: dict[str, Any], pointer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    yield pointer, schema
    for keyword in _ONE:
        if isinstance(schema.get(keyword), dict):
            yield from _walk(schema[keyword], f"{pointer}/{keyword}")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, f"{pointer}/items")
    elif isinstance(items, list):  # draft-07 and older: a tuple
        yield from _walk_list(items, f"{pointer}/items")
    for keyword in _LIST:
        if isinstance(schema.get(keyword), list):
            yield from _walk_list(schema[keyword], f"{pointer}/{keyword}")
    for keyword in _MAP:
        members = schema.get(keyword)
        if isinstance(members, dict):
            for name, child in members.items():
                if isinstance(child, dict):
                    yield from _walk(child, f"{pointer}/{keyword}/{escape(name)}")


def _walk_list(children: list[Any], pointer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for index, child in enumerate(children):
        if isinstance(child, dict):
            yield from _walk(child, f"{pointer}/{index}")


def _refused(definition: dict[str, Any], side: str, pointer: str, value: Any) -> str | None:
    """Why the schema at `pointer` refuses `value` (python-jsonschema, its `$ref`s resolved
    against the side's root), or None when it accepts it or cannot be compiled."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError, best_match

    root = definition[side]
    schema: Any = root
    for escaped in pointer.split("/")[2:]:
        token = unescape(escaped)
        schema = schema[int(token)] if isinstance(schema, list) else schema[token]
    try:
        validator = validators.validator_for(root)(root).evolve(schema=schema)
        error = best_match(validator.iter_errors(value))
    except (SchemaError, LookupError, TypeError, ValueError):
        return None  # a `$ref` it cannot follow: the registry's own checks say so
    return None if error is None else error.message


# -- correctness -------------------------------------------------------------------------


@rule("required-undeclared", "correctness")
def required_undeclared(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A name in `required` that `properties` does not declare: callers must send a
    value nobody described (and a closed object refuses every call).

    Example: {"name": "t", "inputSchema": {"type": "object", "properties": {"q": {}},
    "required": ["query"]}}
    """
    for pointer, schema in schemas(definition):
        required, declared = schema.get("required"), schema.get("properties")
        if not isinstance(required, list) or "allOf" in schema or "anyOf" in schema:
            continue  # a combinator may declare it
        names = declared if isinstance(declared, dict) else {}
        if isinstance(schema.get("patternProperties"), dict) or isinstance(
            schema.get("additionalProperties"), dict
        ):
            continue  # a map: its required names are keys the map's schema reads
        for index, name in enumerate(required):
            if isinstance(name, str) and name not in names:
                yield (
                    f"{pointer}/required/{index}",
                    f"{name!r} is required but not declared in properties",
                )


@rule("default-invalid", "correctness")
def default_invalid(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A `default` its own schema refuses: a caller who sends it is refused.

    Example: {"name": "t", "inputSchema": {"type": "object", "properties":
    {"limit": {"type": "integer", "minimum": 1, "default": 0}}}}
    """
    for pointer, schema in schemas(definition):
        if "default" in schema:
            side = pointer.split("/")[1]
            why = _refused(definition, side, pointer, schema["default"])
            if why is not None:
                yield f"{pointer}/default", f"the default is refused by its own schema: {why}"


@rule("examples-invalid", "correctness")
def examples_invalid(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """An entry of `examples` its own schema refuses: a model copying it is refused.

    Example: {"name": "t", "inputSchema": {"type": "object", "properties":
    {"mode": {"enum": ["read", "write"], "examples": ["append"]}}}}
    """
    for pointer, schema in schemas(definition):
        examples = schema.get("examples")
        if isinstance(examples, list):
            side = pointer.split("/")[1]
            for index, example in enumerate(examples):
                why = _refused(definition, side, pointer, example)
                if why is not None:
                    yield (
                        f"{pointer}/examples/{index}",
                        f"the example is refused by its own schema: {why}",
                    )


@rule("enum-duplicate", "correctness")
def enum_duplicate(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A value written twice in one `enum`: a slip, and a removal of one copy later
    reads as nothing changed.

    Example: {"name": "t", "inputSchema": {"type": "object", "properties":
    {"mode": {"enum": ["read", "write", "read"]}}}}
    """
    import json

    for pointer, schema in schemas(definition):
        values = schema.get("enum")
        if not isinstance(values, list):
            continue
        seen: set[str] = set()
        for index, value in enumerate(values):
            # JSON equality: 1 and true differ, key order does not matter
            key = json.dumps(value, sort_keys=True)
            if key in seen:
                yield f"{pointer}/enum/{index}", f"{key} is already in this enum"
            seen.add(key)


# -- docs -------------------------------------------------------------------------------


@rule("tool-description-missing", "docs")
def tool_description_missing(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A tool without a description: the model chooses tools by what they say.

    Example: {"name": "t", "inputSchema": {"type": "object"}}
    """
    description = definition.get("description")
    if not isinstance(description, str) or not description.strip():
        yield "/description", "the tool has no description"


@rule("property-description-missing", "docs")
def property_description_missing(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """An input property without a description or title: the model fills it by guessing.

    Example: {"name": "t", "description": "Search.", "inputSchema": {"type": "object",
    "properties": {"q": {"type": "string"}}}}
    """
    for pointer, schema in schemas(definition):
        members = schema.get("properties")
        if not pointer.startswith("/inputSchema") or not isinstance(members, dict):
            continue
        for name, child in members.items():
            if isinstance(child, dict) and "$ref" not in child:
                said = child.get("description") or child.get("title")
                if not (isinstance(said, str) and said.strip()):
                    yield f"{pointer}/properties/{escape(name)}", f"{name!r} has no description"


# -- portability ----------------------------------------------------------------------------

_PORTABLE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


@rule("tool-name-portable", "portability")
def tool_name_portable(definition: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A tool name longer than 64 characters or holding a dot: the MCP spec allows both,
    but host APIs that take `^[a-zA-Z0-9_-]{1,64}$` (after their own prefix) refuse it.

    Example: {"name": "db.query", "inputSchema": {"type": "object"}}
    """
    name = definition.get("name")
    if isinstance(name, str) and not _PORTABLE_NAME.match(name):
        yield "/name", f"{name!r} is not portable: use 1-64 of A-Z a-z 0-9 _ -"
