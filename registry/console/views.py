"""What the console's pages show, built from stored records and the rules' answers.

Pure functions, no I/O: the handlers read (through the API's handlers and the
store's functions), these shape, the templates print.

    rows = tool_rows(tool_list, version_states)               # a namespace's tools
    entries = timeline(versions, converters, aliases, events, reports, routes)
    rows = side_by_side(old.definition, new.definition)       # the diff's two columns
    html = shown(text)                                        # invisible characters marked
    marked = risky_lines(new.definition, risks)               # diff lines a finding is on
    tools = listed_tools(document)                            # what a lookup was given
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec
from markupsafe import Markup, escape

from registry.compat import ChangeReport
from registry.policy.acceptance import Acceptance
from registry.policy.verify import ToolVerdict
from registry.risks import Risk
from registry.risks.characters import hidden, name
from registry.sdk.revisions import KNOWN_REVISIONS as REVISIONS
from registry.store import Alias, AuditEvent, Converter, Version
from registry.store.overview import VersionState

__all__ = [
    "AliasView",
    "DiffRow",
    "ListingError",
    "Payload",
    "RouteStepView",
    "TimelineEntry",
    "ToolRow",
    "VerifyRow",
    "event_line",
    "evidence",
    "fingerprint",
    "line_key",
    "listed_tools",
    "risky_lines",
    "shown",
    "side_by_side",
    "timeline",
    "tool_rows",
    "verify_rows",
]


# -- a namespace's tools and aliases ------------------------------------------------


class RouteStepView(msgspec.Struct, frozen=True):
    from_: int = msgspec.field(name="from")
    to: int = 0
    ops: list[dict[str, Any]] = msgspec.field(default_factory=list)
    accepted: bool = False


class _ContractView(msgspec.Struct, frozen=True):
    tool: str
    version: int


class AliasView(msgspec.Struct, frozen=True):
    name: str
    target: str
    contract: _ContractView
    route: list[RouteStepView] | None = None


class Payload(msgspec.Struct, frozen=True):
    """The aliases of a toolset payload (`schemas/toolset.schema.json`) with their routes,
    as the SDK's gates read them; the rest of the payload is skipped, not parsed."""

    aliases: list[AliasView] = msgspec.field(default_factory=list)

    @classmethod
    def decode(cls, body: bytes) -> Payload:
        return msgspec.json.decode(body, type=cls)


class ToolRow(msgspec.Struct, frozen=True):
    name: str
    current: int | None  # None: every version is retired
    state: str | None
    digest: str | None
    served: list[int]  # newest first
    retired: list[int]

    @property
    def served_text(self) -> str:
        return ", ".join(f"v{n}" for n in self.served) or "none"

    @property
    def retired_text(self) -> str:
        return ", ".join(f"v{n}" for n in self.retired) or "none"


_SERVED = ("active", "deprecated")


def tool_rows(tools: Sequence[Any], states: Sequence[VersionState]) -> list[ToolRow]:
    """One row per tool of `GET .../tools` (`ToolEntry`s), with its served and retired
    versions from `states` (every version's effective state, by tool then number)."""
    by_tool: dict[str, list[VersionState]] = {}
    for state in states:
        by_tool.setdefault(state.tool, []).append(state)
    rows = []
    for entry in tools:
        versions = by_tool.get(entry.name, [])
        # a tool none of whose versions is released yet reads as its newest held one
        held = [v.state for v in versions if v.state in ("pending", "rejected")]
        rows.append(
            ToolRow(
                name=entry.name,
                current=entry.current_version,
                state=entry.state or (held[-1] if held and len(held) == len(versions) else None),
                digest=entry.digest,
                served=[v.version for v in reversed(versions) if v.state in _SERVED],
                retired=[v.version for v in versions if v.state == "retired"],
            )
        )
    return rows


# -- a tool's timeline ------------------------------------------------------------------


class TimelineEntry(msgspec.Struct, frozen=True, kw_only=True):
    version: Version
    current: bool
    previous: int | None  # the version this one is compared with
    report: ChangeReport | None  # from `previous` to this one
    route: Sequence[Any] | None  # to current (steps with from_, to, ops), for a served version
    published: AuditEvent | None  # None without the audit log (it needs admin)
    decisions: list[str]  # taken in the same request as the publish
    later: list[tuple[datetime, str]]  # lifecycle since, with when and who
    converters_in: list[Converter]
    accepted: list[Acceptance]  # breaking changes accepted on purpose, stored with it
    aliases: list[Alias]  # aliases whose contract is this version


def event_line(event: AuditEvent) -> str:
    """One line saying what an audit event did."""
    detail = event.detail
    if event.action == "version.publish":
        text = f"published version {event.version}"
    elif event.action == "version.retire":
        text = f"retired version {event.version}"
    elif event.action == "version.deprecate":
        sunset = detail.get("sunset")
        text = f"deprecated version {event.version}" + (f", sunset {sunset}" if sunset else "")
    elif event.action == "converter.register":
        text = f"registered a converter from version {detail.get('from')} to {detail.get('to')}"
    elif event.action == "alias.set":
        text = f"set alias {event.tool}"
    elif event.action in ("version.approve", "version.reject"):
        verb = "approved" if event.action == "version.approve" else "rejected"
        text = f"{verb} version {event.version} in review: {detail.get('reason')}"
    else:
        text = event.action
    return text + (f" (by {event.actor})" if event.actor else "")


def timeline(
    versions: Sequence[Version],
    converters: Sequence[Converter],
    aliases: Sequence[Alias],
    events: Sequence[AuditEvent] | None,
    reports: Mapping[int, ChangeReport],
    routes: Mapping[int, Sequence[Any]],
) -> list[TimelineEntry]:
    """Newest first. `reports[n]`: the change from version n-1 to n; `routes[n]`: the route
    of served version n to current; `events`: the tool's audit events, None when the
    caller may not read the audit log."""
    served = [v for v in versions if v.served]
    current = served[-1].version if served else None
    publishes: dict[int, AuditEvent] = {}
    by_request: dict[str, list[AuditEvent]] = {}
    by_version: dict[int, list[AuditEvent]] = {}
    for event in events or ():
        if event.version is not None:
            by_version.setdefault(event.version, []).append(event)
            if event.action == "version.publish":
                publishes[event.version] = event
        if event.request_id is not None:
            by_request.setdefault(event.request_id, []).append(event)
    converters_to: dict[int, list[Converter]] = {}
    for converter in converters:
        converters_to.setdefault(converter.to_version, []).append(converter)
    contracts: dict[int, list[Alias]] = {}
    for alias in aliases:
        if alias.contract_tool == (versions[0].tool if versions else None):
            contracts.setdefault(alias.contract_version, []).append(alias)
    entries = []
    for version in reversed(versions):
        published = publishes.get(version.version)
        with_it = (
            by_request.get(published.request_id, [])
            if published is not None and published.request_id is not None
            else []
        )
        same_request = {e.id for e in with_it}
        later = [
            (e.at, event_line(e))
            for e in by_version.get(version.version, ())
            if e.action != "version.publish" and e.id not in same_request
        ]
        entries.append(
            TimelineEntry(
                version=version,
                current=version.version == current,
                previous=version.version - 1 if version.version in reports else None,
                report=reports.get(version.version),
                route=routes.get(version.version),
                published=published,
                decisions=[event_line(e) for e in with_it if e is not published],
                later=later,
                converters_in=converters_to.get(version.version, []),
                accepted=version.acceptances,
                aliases=contracts.get(version.version, []),
            )
        )
    return entries


def fingerprint(
    versions: Sequence[Version], converters: Sequence[Converter], aliases: Sequence[Alias]
) -> str:
    """What a tool page shows that can change (states, sunsets, versions, converters,
    aliases), as a short hash: the live request re-renders only when it differs."""
    seen = (
        [(v.version, v.state, v.sunset) for v in versions],
        [(c.from_version, c.to_version) for c in converters],
        [(a.name, a.target_tool, a.contract_tool, a.contract_version) for a in aliases],
    )
    return hashlib.sha256(msgspec.json.encode(seen)).hexdigest()[:32]


# -- the diff's two columns -------------------------------------------------------------


class DiffRow(msgspec.Struct, frozen=True):
    tag: Literal["same", "changed", "removed", "added"]
    old_number: int | None
    old_line: str | None
    new_number: int | None
    new_line: str | None


def pretty(value: Any) -> str:
    """JSON as the console prints a definition: keys sorted, two-space indent."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def side_by_side(old: Any, new: Any) -> list[DiffRow]:
    """Both definitions line by line (difflib's matching), changed lines tagged; `old`
    None: nothing (a first version, every line added)."""
    left = pretty(old).splitlines() if old is not None else []
    right = pretty(new).splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [
                DiffRow("same", i + 1, left[i], j + 1, right[j])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            has_old, has_new = i < i2, j < j2
            rows.append(
                DiffRow(
                    "changed" if has_old and has_new else "removed" if has_old else "added",
                    i + 1 if has_old else None,
                    left[i] if has_old else None,
                    j + 1 if has_new else None,
                    right[j] if has_new else None,
                )
            )
    return rows


def shown(text: Any) -> Markup:
    """`text`, HTML-escaped, each invisible character written out in a mark
    (`<mark class="hidden-char">U+200B ZERO WIDTH SPACE</mark>`): what a page shows of a
    definition, whose hidden characters a reader must see."""
    value = "" if text is None else str(text)
    found = hidden(value)
    if not found:
        return escape(value)
    parts: list[str] = []
    start = 0
    for offset, char in found:
        parts.append(escape(value[start:offset]))
        parts.append(f'<mark class="hidden-char">{escape(name(char))}</mark>')
        start = offset + 1
    parts.append(escape(value[start:]))
    return Markup("".join(parts))


# what registry.risks.characters.visible writes for an invisible character, escaped
_WRITTEN_OUT = re.compile(r"&lt;(U\+[0-9A-F]{4,6} [A-Z0-9 -]+)&gt;")


def evidence(text: str) -> Markup:
    """A finding's evidence as `shown` marks it, the characters it already wrote out
    (`<U+200B ZERO WIDTH SPACE>`) marked the same way."""
    return Markup(
        _WRITTEN_OUT.sub(
            lambda found: f'<mark class="hidden-char">{found.group(1)}</mark>', str(shown(text))
        )
    )


def _at(definition: Any, pointer: str) -> tuple[bool, Any]:
    """The value at a JSON Pointer: (found, value)."""
    value = definition
    for part in pointer.split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return False, None
    return True, value


def risky_lines(definition: Any, risks: Sequence[Risk]) -> dict[str, list[str]]:
    """The lines of `pretty(definition)` (stripped, without a trailing comma) that carry
    a risk finding, each with the kinds found there: a finding's path names a string or
    a hint, one line of the pretty JSON. Paths to an object or an array mark nothing."""
    marked: dict[str, list[str]] = {}
    for risk in risks:
        found, value = _at(definition, risk.path)
        if not found or isinstance(value, (dict, list)):
            continue  # a hint removed (read by its default), or a whole object
        leaf = risk.path.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        literal = json.dumps(value, ensure_ascii=False)
        line = literal if leaf.isdigit() else f"{json.dumps(leaf, ensure_ascii=False)}: {literal}"
        kinds = marked.setdefault(line, [])
        if risk.kind.value not in kinds:
            kinds.append(risk.kind.value)
    return marked


def line_key(line: str | None) -> str:
    """A diff line as `risky_lines` keys it."""
    return (line or "").strip().removesuffix(",")


# -- digest lookup and listing verification ---------------------------------------------


class ListingError(ValueError):
    pass


def listed_tools(document: Any) -> list[Any]:
    """The tools of what was pasted: a `tools/list` result, the JSON-RPC response that
    carries one, a list of tools, or one tool."""
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]
    if isinstance(document, dict) and "tools" in document:
        document = document["tools"]
    elif isinstance(document, dict) and "name" in document:
        document = [document]
    if not isinstance(document, list):
        raise ListingError(
            "this is not a tools/list result: expected an object with a tools array, "
            "a JSON-RPC response carrying one, an array of tools or one tool"
        )
    if not document:
        raise ListingError("the listing has no tools")
    return document


class VerifyRow(msgspec.Struct, frozen=True):
    name: str
    verdicts: list[ToolVerdict]  # one per revision of `REVISIONS`, in date order


def verify_rows(per_revision: Mapping[str, Sequence[ToolVerdict]]) -> list[VerifyRow]:
    """The verdicts of each revision, turned into one row per listed tool."""
    revisions = [r for r in sorted(REVISIONS) if r in per_revision]
    if not revisions:
        return []
    count = len(per_revision[revisions[0]])
    return [
        VerifyRow(
            name=per_revision[revisions[0]][index].name,
            verdicts=[per_revision[r][index] for r in revisions],
        )
        for index in range(count)
    ]
