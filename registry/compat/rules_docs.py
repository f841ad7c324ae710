"""Rules on schema annotations (cosmetic) and on keywords the engine does not
analyse (fail closed: `unanalyzable`, breaking).
"""

from __future__ import annotations

from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.walk import Finding, Leaf, Route, Walk

__all__ = ["RULES"]

_ANNOTATION_KINDS = {
    "description": Kind.DESCRIPTION_CHANGED,
    "title": Kind.TITLE_CHANGED,
    "examples": Kind.EXAMPLES_CHANGED,
    "$comment": Kind.COMMENT_CHANGED,
    # No validation effect; reported as documentation changes.
    "deprecated": Kind.DESCRIPTION_CHANGED,
    "readOnly": Kind.DESCRIPTION_CHANGED,
    "writeOnly": Kind.DESCRIPTION_CHANGED,
    "contentMediaType": Kind.DESCRIPTION_CHANGED,
    "contentEncoding": Kind.DESCRIPTION_CHANGED,
}


def annotation_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`description-changed`, `title-changed`, `examples-changed`,
    `comment-changed` inside a schema: cosmetic, always reported.
    Example: `{"description": "Max rows"}` -> `{"description": "Row cap"}`."""
    if not old.annotations and not new.annotations:
        return
    for keyword, kind in _ANNOTATION_KINDS.items():
        before = old.annotations.get(keyword)
        after = new.annotations.get(keyword)
        if before != after:
            walk.emit(Finding(kind, f"{pointer}/{keyword}", keyword, before, after))


def unanalyzable_keyword(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`unanalyzable`: a keyword the engine does not fully understand (`not`,
    `if`/`then`/`else`, `patternProperties`, `dependentSchemas`, `$dynamicRef`,
    vendor keywords, ...) differs, or the dialect (`$schema`) changed. Fail
    closed: breaking. Example: `{"not": {"type": "null"}}` -> `{"not":
    {"type": "string"}}`."""
    if not old.opaque and not new.opaque and old.schema_uri == new.schema_uri:
        return
    for keyword in sorted(old.opaque.keys() | new.opaque.keys()):
        before = old.opaque.get(keyword)
        after = new.opaque.get(keyword)
        if before != after:
            walk.emit(
                Finding(
                    Kind.UNANALYZABLE,
                    f"{pointer}/{keyword}",
                    keyword,
                    before,
                    after,
                    route,
                    Leaf("sample"),
                )
            )
    if _dialect(old.schema_uri) != _dialect(new.schema_uri):
        walk.emit(
            Finding(
                Kind.UNANALYZABLE,
                f"{pointer}/$schema",
                "$schema",
                old.schema_uri,
                new.schema_uri,
                route,
                Leaf("sample"),
            )
        )


def _dialect(uri: str | None) -> str:
    """Absent `$schema` means 2020-12, the MCP default."""
    if uri is None:
        return "https://json-schema.org/draft/2020-12/schema"
    return uri.rstrip("#").replace(
        "http://json-schema.org/draft/2020-12", "https://json-schema.org/draft/2020-12"
    )


RULES = (annotation_changed, unanalyzable_keyword)
