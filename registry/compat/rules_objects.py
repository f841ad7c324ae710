"""Rules on object schemas: properties, `required`, defaults, renames and the
content model (`additionalProperties`, `unevaluatedProperties`).

The seed 000 point lives here: a property removed or renamed breaks callers
even when `additionalProperties` still lets them send it (the value is then
silently ignored), and a default added, changed or removed breaks them
because an absent value is now read differently.
"""

from __future__ import annotations

from typing import Any

from jsonschema.validators import Draft202012Validator, validator_for

from registry.compat.jsonvalues import encode, json_key
from registry.compat.kinds import Kind
from registry.compat.schema import ANYTHING, Node
from registry.compat.shape import shape
from registry.compat.validity import Unsupported, plain_checker
from registry.compat.walk import (
    ABSENT,
    Finding,
    Leaf,
    Route,
    Step,
    Walk,
    arguments_pointer,
    deref,
)
from registry.patterns import PatternError, linear_validator, search
from registry.pointers import escape

__all__ = ["RULES", "default_changed", "property_added", "required_removed"]


def _both_objects(old: Node, new: Node) -> bool:
    """Object keywords matter only where old and new both admit objects; a type
    change is reported by the type rule."""
    return old.admits("object") and new.admits("object")


def _renames(old: Node, new: Node) -> dict[str, str]:
    """Pair each removed property with the one added property of the same shape.

    Ambiguous pairs (several candidates on either side) are not renames, nor
    is a name the new version still requires.
    """
    old_names, new_names = old.properties.keys(), new.properties.keys()
    removed = [n for n in old_names if n not in new_names and n not in new.required]
    added = [n for n in new_names if n not in old_names]
    if not removed or not added:
        return {}
    # equal shapes need equal `type`s: only names whose types meet the other side's get a shape
    old_nodes = {name: deref(old.properties[name]) for name in removed}
    new_nodes = {name: deref(new.properties[name]) for name in added}
    old_types = {_declared_types(node) for node in old_nodes.values()}
    new_types = {_declared_types(node) for node in new_nodes.values()}
    # names by shape, on each side (grouped: one pass each, however many names)
    old_by_shape: dict[str, list[str]] = {}
    for name, node in old_nodes.items():
        if _declared_types(node) in new_types:
            old_by_shape.setdefault(shape(node), []).append(name)
    new_by_shape: dict[str, list[str]] = {}
    for name, node in new_nodes.items():
        if _declared_types(node) in old_types:
            new_by_shape.setdefault(shape(node), []).append(name)
    pairs: dict[str, str] = {}
    for old_shape, names in old_by_shape.items():
        candidates = new_by_shape.get(old_shape, ())
        if len(names) == 1 and len(candidates) == 1:
            pairs[names[0]] = candidates[0]
    return pairs


def _declared_types(node: Node) -> Any:
    """What `shape` records of a node's `type` (equal shapes, equal results)."""
    if isinstance(node.raw, bool):
        return node.raw
    return None if node.types is None else frozenset(node.types)


def object_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """Properties, then `required`, sharing one rename pairing."""
    if not _both_objects(old, new):
        return
    renames = _renames(old, new)
    properties_changed(walk, old, new, pointer, route, renames)
    required_changed(walk, old, new, pointer, route, renames)


def properties_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, renames: dict[str, str]
) -> None:
    """`property-removed`, `property-added`, `property-renamed`, then each
    common property compared in depth.

    Example: `{"timeout_ms": {"type": "integer"}}` -> `{"timeout": {"type":
    "integer"}}` is property-renamed with suggested op
    `{"op": "rename", "from": "/timeout_ms", "to": "/timeout"}`; removing
    `mode` alone is property-removed even under `additionalProperties: true`.
    """
    old_names, new_names = old.properties.keys(), new.properties.keys()
    removed = [n for n in old_names if n not in new_names]
    added = [n for n in new_names if n not in old_names]
    renamed_to = set(renames.values())
    for name in removed:
        at = f"{pointer}/properties/{escape(name)}"
        target = arguments_pointer((*route, Step("prop", name)))
        gone = old.properties[name]
        if name in renames:
            new_name = renames[name]
            op = (
                {
                    "op": "rename",
                    "from": target,
                    "to": arguments_pointer((*route, Step("prop", new_name))),
                }
                if target
                else None
            )
            walk.emit(
                Finding(
                    kind=Kind.PROPERTY_RENAMED,
                    pointer=at,
                    name=name,
                    old=name,
                    new=new_name,
                    route=(*route, Step("prop", name)),
                    leaf=Leaf("sample"),
                    suggested_op=op,
                    extra={"new_name": new_name},
                    refused=_refused(walk, new, name, gone),
                    holder=new.pointer,
                )
            )
            new_at = f"{pointer}/properties/{escape(new_name)}"
            default_changed(walk, old, new, name, new_name, new_at, route)
            walk.compare(gone, new.properties[new_name], new_at, (*route, Step("prop", name)))
            continue
        if walk.validity and open_to_all(new):
            continue  # kept unread: a validity probe does not count a value dropped
        if deref(gone).unsatisfiable():
            continue  # a property whose schema accepts nothing was never sent
        kept = map_schema(new, name)
        if kept is None and walk.validity:
            continue
        if kept is not None and walk.fits(gone, kept, validity=True):
            # still read, as an entry of the map the new version declares
            walk.compare(gone, kept, at, (*route, Step("prop", name)))
            continue
        # (a name the new version still requires cannot simply be dropped)
        op = {"op": "drop", "path": target} if target and name not in new.required else None
        walk.emit(
            Finding(
                kind=Kind.PROPERTY_REMOVED,
                pointer=at,
                name=name,
                old=_raw(gone),
                new=ABSENT,
                route=(*route, Step("prop", name)),
                leaf=Leaf("sample"),
                suggested_op=op,
                refused=kept is not None,
                holder=new.pointer,
            )
        )
    for name in added:
        if name in renamed_to:
            continue
        at = f"{pointer}/properties/{escape(name)}"
        walk.emit(property_added(at, name, _raw(new.properties[name])))
        default_changed(walk, old, new, None, name, at, route)
        unlisted = _unlisted_schema(old, name)
        if unlisted is not None:
            walk.compare(unlisted, new.properties[name], at, (*route, Step("prop", name)))
    # A property with the same schema on both sides (no `$ref`) has the same
    # default and nothing below it differs: only the others are compared.
    for name in walk.changed_properties(old, new):
        at = f"{pointer}/properties/{escape(name)}"
        default_changed(walk, old, new, name, name, at, route)
        walk.compare(old.properties[name], new.properties[name], at, (*route, Step("prop", name)))


def property_added(at: str, name: str, schema: Any) -> Finding:
    """`property-added`: an object declares a property it did not (additive;
    with a default it is `default-added` too, `default_changed`'s finding).
    Example: `{"properties": {"q": {}}}` -> `{"properties": {"q": {}, "limit":
    {"type": "integer"}}}` is property-added at `/properties/limit`."""
    return Finding(kind=Kind.PROPERTY_ADDED, pointer=at, name=name, new=schema)


def _refused(walk: Walk, new: Node, name: str, gone: Node) -> bool:
    """Whether the new version refuses a value sent under the old name outright
    (a closed content model, or a map schema the old value does not fit)."""
    kept = map_schema(new, name)
    return kept is not None and not walk.fits(gone, kept, validity=True)


def _unlisted_schema(old: Node, name: str) -> Node | None:
    """What old said of a property it did not list, where callers relied on it:
    the schema of a matching `patternProperties`, the map schema
    (`additionalProperties`, or `unevaluatedProperties` read alike), or
    anything at all for a name old required. An optional name under an open
    content model was no contract: declaring it is additive (docs/contract.md)."""
    if _evaluated_elsewhere(old):
        return ANYTHING  # a subschema may have accepted it: compare with anything
    governing = map_schema(old, name)
    if governing is not None:
        return None if governing.accepts_nothing else governing
    return ANYTHING if name in old.required else None


def map_schema(node: Node, name: str) -> Node | None:
    """The schema an unlisted property `name` must meet under `node`: the first
    matching `patternProperties` schema, else `additionalProperties` (or
    `unevaluatedProperties` where no subschema evaluates properties) when it is
    a schema; None where unlisted names are free."""
    for pattern, schema in node.pattern_properties.items():
        if _matches(pattern, name):
            return schema
    _, extra = governing_extra(node)
    if extra is None or extra.raw is True:
        return None
    return extra


def open_to_all(node: Node) -> bool:
    """Whether any unlisted name is free under `node` (no pattern, no map schema)."""
    if node.pattern_properties:
        return False
    extra = node.additional_properties
    if extra is None:
        extra = node.unevaluated_properties
    return extra is None or extra.raw is True


def governing_extra(node: Node) -> tuple[str, Node | None]:
    """The keyword governing unlisted properties and its schema (None: open)."""
    if node.additional_properties is not None:
        return "additionalProperties", node.additional_properties
    return "unevaluatedProperties", node.unevaluated_properties


def _evaluated_elsewhere(node: Node) -> bool:
    """Whether `unevaluatedProperties` governs here while subschemas beside it
    may evaluate properties too (which names they evaluate depends on the instance)."""
    extra = node.unevaluated_properties
    return (
        node.additional_properties is None
        and extra is not None
        and extra.raw is not True
        and node.has_applicators()
    )


def _matches(pattern: str, name: str) -> bool:
    try:
        return search(pattern, name)
    except PatternError:
        return True  # a pattern RE2 cannot run may match: assume it does


def default_changed(
    walk: Walk,
    old: Node,
    new: Node,
    old_name: str | None,
    new_name: str,
    at: str,
    route: Route,
) -> None:
    """`default-added`, `default-changed`, `default-removed` on one property.

    Example: `{"limit": {"type": "integer"}}` -> `{"limit": {"type":
    "integer", "default": 20}}` is default-added: a caller that left `limit`
    out is now read as asking for 20. Suggested op: fill the value the old
    version read. A property old required is always sent: its default never
    applied to old callers, so nothing is reported.
    """
    if old_name is not None and old_name in old.required:
        return
    old_node = deref(old.properties[old_name]) if old_name is not None else None
    new_node = deref(new.properties[new_name])
    has_old = old_node is not None and old_node.has_default
    has_new = new_node.has_default
    old_value = old_node.default if old_node is not None and has_old else ABSENT
    new_value = new_node.default if has_new else ABSENT
    if has_old and has_new and json_key(old_value) == json_key(new_value):
        return
    if not has_old and not has_new:
        return
    if has_new and not has_old:
        kind, fill = Kind.DEFAULT_ADDED, new_value
    elif has_old and not has_new:
        kind, fill = Kind.DEFAULT_REMOVED, old_value
    else:
        kind, fill = Kind.DEFAULT_CHANGED, old_value
    target = arguments_pointer((*route, Step("prop", new_name)))
    op = {"op": "fill", "path": target, "value": fill} if target else None
    if op is not None and not _sendable(new_node, fill):
        op = None  # no call carrying it would be valid: nothing to convert to
    leaf = Leaf("absent", name=old_name or new_name)
    walk.emit(
        Finding(
            kind=kind,
            pointer=f"{at}/default",
            name=new_name,
            old=old_value,
            new=new_value,
            route=route,
            leaf=leaf,
            suggested_op=op,
        )
    )


def _sendable(node: Node, value: Any) -> bool:
    """Whether `value`, filled in by a converter, meets the property's schema
    in the new version: a default need not (JSON Schema never checks one).
    Checked by python-jsonschema; a schema with a `$ref` (which needs the whole
    document) is taken to accept it, as the converter's verification will tell.
    The plain check (validity.py) answers first where it reads the schema alike."""
    raw = node.raw
    if not isinstance(raw, dict):
        return raw is not False
    code = encode(raw)
    if code is None or b'"$ref"' in code:
        return True
    cls = validator_for({"$schema": node.dialect.uri}, default=Draft202012Validator)
    plain = plain_checker(raw, code, cls, formats=False)
    if plain is not None:
        try:
            return plain(value)
        except Unsupported:
            pass
    try:
        return bool(linear_validator(cls)(raw).is_valid(value))
    except Exception:  # a schema python-jsonschema cannot run: let verification decide
        return True


def required_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route, renames: dict[str, str]
) -> None:
    """`required-added`, `required-removed`.

    Example: `{"required": ["query"]}` -> `{"required": ["query",
    "filters"]}` is required-added for `filters` (an old call without it is
    refused). Suggested op: fill it, where a value is known that means what
    an old call meant by leaving it out: the default the old version read it
    as, or the one value the new version allows. No value is made up (the
    server would read it as the caller's): otherwise no op is suggested.
    """
    renamed_from = {new_name: old_name for old_name, new_name in renames.items()}
    for name in sorted(new.required - old.required):
        source = renamed_from.get(name)
        if source is not None and source in old.required:
            continue
        target = arguments_pointer((*route, Step("prop", name)))
        value = _known_value(old.properties.get(source or name), new.properties.get(name))
        op = {"op": "fill", "path": target, "value": value} if target and value is not _NO else None
        walk.emit(
            Finding(
                kind=Kind.REQUIRED_ADDED,
                pointer=f"{pointer}/required",
                name=name,
                old=ABSENT,
                new=name,
                route=route,
                leaf=Leaf("absent", name=source or name),
                suggested_op=op,
            )
        )
    for name in sorted(old.required - new.required):
        if name in renames and renames[name] in new.required:
            continue
        walk.emit(required_removed(f"{pointer}/required", name))


def required_removed(at: str, name: str) -> Finding:
    """`required-removed`: a name the object no longer requires (additive on
    input, breaking on output). Example: `{"required": ["q", "n"]}` ->
    `{"required": ["q"]}` is required-removed for `n`."""
    return Finding(kind=Kind.REQUIRED_REMOVED, pointer=at, name=name, old=name)


def _known_value(before: Node | None, after: Node | None) -> Any:
    """The value to fill a property now required with, or `_NO`: the default
    the old version read an absent value as (where the new version accepts
    it), else the only value the new version allows."""
    if before is not None and deref(before).has_default:
        default = deref(before).default
        if after is None or _sendable(deref(after), default):
            return default
    allowed = deref(after).allowed_values() if after is not None else None
    return allowed[0] if allowed is not None and len(allowed) == 1 else _NO


_NO: Any = object()


def content_model_changed(walk: Walk, old: Node, new: Node, pointer: str, route: Route) -> None:
    """`content-model-closed`, `content-model-opened` for `additionalProperties`
    and `unevaluatedProperties` (read like `additionalProperties` where no
    subschema beside it evaluates properties).

    Example: `additionalProperties` absent -> `false` closes the content model
    (an old call carrying an unlisted property is refused); a schema replacing
    `true` narrows it the same way; `false` -> absent opens it. Two schemas
    are compared in depth as the values of a map. `unevaluatedProperties`
    beside `allOf`/`anyOf`/`$ref` that evaluate properties is unanalyzable
    when it changes (`unanalyzable`).
    """
    if (
        old.additional_properties is None
        and new.additional_properties is None
        and old.unevaluated_properties is None
        and new.unevaluated_properties is None
    ):
        return  # open on both sides
    if not _both_objects(old, new):
        return
    old_keyword, old_child = governing_extra(old)
    new_keyword, new_child = governing_extra(new)
    old_open = old_child is None or old_child.raw is True
    new_open = new_child is None or new_child.raw is True
    if old_open and new_open:
        return
    keyword = new_keyword if new_child is not None else old_keyword
    at = f"{pointer}/{keyword}"
    old_shown = ABSENT if old_child is None else _raw(old_child)
    new_shown = ABSENT if new_child is None else _raw(new_child)
    if _evaluated_elsewhere(old) or _evaluated_elsewhere(new):
        if old_keyword != new_keyword or old_shown != new_shown:
            walk.emit(
                Finding(
                    kind=Kind.UNANALYZABLE,
                    pointer=at,
                    name=keyword,
                    old=old_shown,
                    new=new_shown,
                    route=route,
                    leaf=Leaf("sample"),
                )
            )
        return
    extra = _unlisted_name(old, new)
    if old_open:
        walk.emit(
            Finding(
                kind=Kind.CONTENT_MODEL_CLOSED,
                pointer=at,
                name=keyword,
                old=old_shown,
                new=new_shown,
                route=route,
                leaf=Leaf("with", _unlisted_value(new_child), extra),
            )
        )
    elif new_open:
        walk.emit(
            Finding(
                kind=Kind.CONTENT_MODEL_OPENED,
                pointer=at,
                name=keyword,
                old=old_shown,
                new=new_shown,
            )
        )
    else:
        assert old_child is not None and new_child is not None
        walk.compare(old_child, new_child, at, (*route, Step("extra", extra)))


def pattern_properties_changed(
    walk: Walk, old: Node, new: Node, pointer: str, route: Route
) -> None:
    """`patternProperties`: the schema of each pattern compared in depth as the
    values of a map. A pattern added must accept what old allowed for the
    names it matches (listed ones included); the names of a pattern removed
    fall to the new map schema, which must accept what the pattern did.
    Example: `{"patternProperties": {"^x_": {"type": "string"}}}` ->
    `{"patternProperties": {"^x_": {"type": "integer"}}}` is type-narrowed
    (`{"x_a": "a"}` was valid)."""
    if not old.pattern_properties and not new.pattern_properties:
        return
    if not _both_objects(old, new):
        return
    old_patterns, new_patterns = old.pattern_properties, new.pattern_properties
    for pattern in old_patterns.keys() & new_patterns.keys():
        walk.compare(
            old_patterns[pattern],
            new_patterns[pattern],
            f"{pointer}/patternProperties/{escape(pattern)}",
            (*route, Step("extra", _name_matching(pattern, old))),
        )
    for pattern in sorted(new_patterns.keys() - old_patterns.keys()):
        _pattern_added(walk, old, new, pattern, f"{pointer}/patternProperties", route)
    for pattern in sorted(old_patterns.keys() - new_patterns.keys()):
        _pattern_removed(walk, old, new, pattern, f"{pointer}/patternProperties", route)


def _pattern_added(walk: Walk, old: Node, new: Node, pattern: str, at: str, route: Route) -> None:
    """A new pattern constrains the names it matches: the listed properties old
    and new share that it matches, and unlisted names old let through a
    pattern or a map schema (names under an open model were no contract)."""
    schema = new.pattern_properties[pattern]
    sources: list[tuple[str, Node]] = [
        (name, old.properties[name])
        for name in old.properties
        if name in new.properties and _matches(pattern, name)
    ]
    name = _name_matching(pattern, old)
    sources += [(name, s) for s in old.pattern_properties.values()]
    _, extra = governing_extra(old)
    if extra is not None and extra.raw is not True and not extra.accepts_nothing:
        sources.append((name, extra))
    for source_name, source in sources:
        findings = walk.probe(source, schema, (*route, Step("prop", source_name)), validity=True)
        for finding in findings:
            finding.pointer = f"{at}/{escape(pattern)}" + finding.pointer[len(schema.pointer) :]
            walk.emit(finding)
        if findings:
            return


def _pattern_removed(walk: Walk, old: Node, new: Node, pattern: str, at: str, route: Route) -> None:
    """Names a pattern no longer governs fall to the other patterns and the map
    schema of the new version: each must accept what the pattern did."""
    schema = old.pattern_properties[pattern]
    _, extra = governing_extra(new)
    targets = list(new.pattern_properties.values())
    if extra is not None and extra.raw is not True:
        targets.append(extra)
    name = _name_matching(pattern, old)
    for target in targets:
        findings = walk.probe(schema, target, (*route, Step("extra", name)), validity=True)
        for finding in findings:
            walk.emit(finding)
        if findings:
            return


def _name_matching(pattern: str, node: Node) -> str:
    """A property name `pattern` matches that `node` does not list (best
    effort: the pattern's literal start, then common shapes)."""
    literal = ""
    for char in pattern.removeprefix("^"):
        if char.isalnum() or char in "_-":
            literal += char
        else:
            break
    for candidate in (literal + "x", literal, "x", "a", "a1", "A", "_x", "0", "x-y", "x.y"):
        if candidate and candidate not in node.properties and _matches(pattern, candidate):
            return candidate
    return literal or "x"


def _unlisted_name(old: Node, new: Node) -> str:
    """A property name neither version lists nor governs by a pattern."""
    patterns = [*old.pattern_properties, *new.pattern_properties]
    name, n = "unlisted", 0
    while (
        name in old.properties
        or name in new.properties
        or any(_matches(pattern, name) for pattern in patterns)
    ) and n < 50:
        n += 1
        name = f"unlisted_{n}"
    return name


def _unlisted_value(schema: Node | None) -> Any:
    """A value the new map schema likely refuses (the false schema refuses all)."""
    if schema is None or schema.accepts_nothing:
        return "x"
    types = schema.types or frozenset()
    return 0 if "string" in types else "x"


def _raw(node: Node) -> Any:
    return node.raw


RULES = (object_changed, content_model_changed, pattern_properties_changed)
