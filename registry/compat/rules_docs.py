"""Rules on schema annotations (cosmetic) and on keywords the engine does not
analyse (fail closed: `unanalyzable`, breaking).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from registry.compat.dialects import ANNOTATIONS, dialect_of
from registry.compat.jsonvalues import json_same
from registry.compat.kinds import Kind
from registry.compat.schema import Node
from registry.compat.walk import ABSENT, Finding, Leaf, Route, Walk, deref

__all__ = ["ANNOTATION_KINDS", "RULES", "annotation_changes", "holders_changed"]


# annotation keyword -> the kind its change is reported as (cosmetic, every one)
ANNOTATION_KINDS: dict[str, Kind] = {
    "description": Kind.DESCRIPTION_CHANGED,
    "title": Kind.TITLE_CHANGED,
    "examples": Kind.EXAMPLES_CHANGED,
    "$comment": Kind.COMMENT_CHANGED,
    "deprecated": Kind.DEPRECATED_CHANGED,
    "readOnly": Kind.ACCESS_CHANGED,
    "writeOnly": Kind.ACCESS_CHANGED,
    "contentMediaType": Kind.ENCODED_CONTENT_CHANGED,
    "contentEncoding": Kind.ENCODED_CONTENT_CHANGED,
    "contentSchema": Kind.ENCODED_CONTENT_CHANGED,
}
assert ANNOTATION_KINDS.keys() == ANNOTATIONS


def annotation_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """The annotations of a schema node (`annotation_changes`), unless
    `holders_changed` compared them at the position of their `$ref` holders."""
    if (old.annotations or new.annotations) and walk.covered != (id(old), id(new)):
        for finding in annotation_changes(pointer, old.annotations, new.annotations):
            walk.emit(finding)


def annotation_changes(
    pointer: str, old: Mapping[str, Any], new: Mapping[str, Any], keys: Iterable[str] = ()
) -> list[Finding]:
    """`description-changed`, `title-changed`, `examples-changed`,
    `comment-changed`, `deprecated-changed`, `access-changed` (`readOnly`,
    `writeOnly`), `encoded-content-changed` (`contentMediaType`,
    `contentEncoding`, `contentSchema`) between the annotations of a schema
    (`keys`: the annotation keywords to look at, all of them when empty):
    cosmetic, always reported, compared as JSON (`1` is not `true`).
    Example: `{"description": "Max rows"}` -> `{"description": "Row cap"}` is
    description-changed; adding `"deprecated": true` is deprecated-changed."""
    findings = []
    for keyword in keys or ANNOTATION_KINDS:
        before, after = old.get(keyword, ABSENT), new.get(keyword, ABSENT)
        if before is not after and (before != after or not json_same(before, after)):
            findings.append(
                Finding(
                    kind=ANNOTATION_KINDS[keyword],
                    pointer=f"{pointer}/{keyword}",
                    name=keyword,
                    old=before,
                    new=after,
                )
            )
    return findings


def unanalyzable_keyword(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`unanalyzable`: a keyword the engine does not analyse (`if`/`then`/`else`,
    `$dynamicRef`, a vendor keyword, one the side's dialect does not define,
    ...) differs, or a keyword both sides hold is native to one side's dialect
    and borrowed from another by the other (one validator may ignore what the
    other enforces). Fail closed: breaking. Example: `{"if": {"type": "null"}}`
    -> `{"if": {"type": "string"}}`."""
    if old.borrowed or new.borrowed:
        _borrowed_changed(walk, old, new, pointer, route)
    if not old.opaque and not new.opaque:
        return
    for keyword in sorted(old.opaque.keys() | new.opaque.keys()):
        before = old.opaque.get(keyword, ABSENT)
        after = new.opaque.get(keyword, ABSENT)
        if before != after:
            walk.emit(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer=f"{pointer}/{keyword}",
                    name=keyword,
                    old=before,
                    new=after,
                    route=route,
                    leaf=Leaf("sample"),
                )
            )


def _borrowed_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    both = old.raw.keys() & new.raw.keys() if isinstance(old.raw, dict) else set()
    for keyword in sorted((old.borrowed ^ new.borrowed) & both):
        if keyword in old.opaque or keyword in new.opaque:
            continue  # reported with the opaque keywords
        walk.emit(
            Finding(
                kind=Kind.UNANALYZABLE,
                pointer=f"{pointer}/{keyword}",
                name=keyword,
                old=old.raw[keyword],
                new=new.raw[keyword],
                route=route,
                leaf=Leaf("sample"),
            )
        )


def dialect_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`dialect-changed`: the root `$schema` names another dialect (or spells
    the same one differently). Each side was read in its own dialect into one
    model, so what changed for instances is reported by the other rules; this
    change itself is cosmetic. A dialect the engine does not know (draft-03,
    a custom meta-schema) on either side is `unanalyzable`.
    Example: `"$schema": "http://json-schema.org/draft-07/schema#"` ->
    `"$schema": "https://json-schema.org/draft/2020-12/schema"` with the same
    keywords is dialect-changed alone."""
    if old.schema_uri == new.schema_uri or walk.covered == (id(old), id(new)):
        return
    known = dialect_of(old.schema_uri) is not None and dialect_of(new.schema_uri) is not None
    walk.emit(
        Finding(
            kind=Kind.DIALECT_CHANGED if known else Kind.UNANALYZABLE,
            pointer=f"{pointer}/$schema",
            name="$schema",
            old=ABSENT if old.schema_uri is None else old.schema_uri,
            new=ABSENT if new.schema_uri is None else new.schema_uri,
            route=None if known else route,
            leaf=None if known else Leaf("sample"),
        )
    )


def holders_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """What `$ref` holders carry beside the reference, at their position
    (the walk calls this with the holders, on either side or both, before it
    follows them): annotations, and the root's `$schema`. A holder's annotation
    stands over its target's; where both sides refer to one definition, the
    targets' own are compared there instead, else here (and not again).
    Kinds: those of `annotation_changes` and `dialect_changed`. Example:
    `{"$ref": "#/$defs/args", "description": "Old"}` -> the same with "New",
    a definition changed too, is description-changed at the holder's pointer."""
    old_target, new_target = deref(old), deref(new)
    same = old_target is not old and new_target is not new and old.raw["$ref"] == new.raw["$ref"]
    findings = annotation_changes(
        pointer,
        _position_annotations(old, old_target, same),
        _position_annotations(new, new_target, same),
    )
    for finding in findings:
        walk.emit(finding)
    dialect_changed(
        walk, _dialect_holder(old, old_target), _dialect_holder(new, new_target), pointer, route
    )
    if not same:
        walk.covered = (id(old_target), id(new_target))


def _position_annotations(holder: Node, target: Node, same: bool) -> dict[str, Any]:
    """The annotations at a holder's position: the outermost holder's first,
    then those further along, then (unless `same`) the target's."""
    chain = []
    node: Node | None = holder
    while node is not None and node is not target:
        chain.append(node.annotations)
        node = node.ref
    if not same:
        chain.append(target.annotations)
    found: dict[str, Any] = {}
    for notes in reversed(chain):
        found.update(notes)
    return found


def _dialect_holder(holder: Node, target: Node) -> Node:
    """The node whose `$schema` rules the position (the first that names one)."""
    node: Node | None = holder
    while node is not None and node is not target:
        if node.schema_uri is not None:
            return node
        node = node.ref
    return target


RULES = (annotation_changed, unanalyzable_keyword, dialect_changed)
