"""Who still calls a version: usage answers, durations, and the evidence for a retirement.

Pure: the rows come from `registry.store.usage.usage_rows` (or anything of
their shape), the times from the caller.

    window = parse_duration("7d")                       # timedelta(days=7)
    answers = summarize(rows, since=now - window, until=now)
    evidence = retirement_evidence(answer_for_v3, require_idle=window, warn=window, now=now)
    evidence.refused   # True: called within require_idle
    evidence.message   # "db.query v3 was called 1,204 times in the last 7d ..."
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Annotated, Any, Final, Protocol

import msgspec

__all__ = [
    "DURATION_PATTERN",
    "DecisionCount",
    "Evidence",
    "RequireIdle",
    "ServerUsage",
    "ToolUsage",
    "VersionUsage",
    "callers_of",
    "format_duration",
    "idle",
    "parse_duration",
    "retirement_evidence",
    "retiring",
    "summarize",
    "who_calls",
]

DURATION_PATTERN: Final = r"^[1-9][0-9]{0,6}(s|m|h|d|w)$"
_DURATION = re.compile(DURATION_PATTERN)
_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
MAX_DURATION: Final = timedelta(days=3660)

RequireIdle = Annotated[
    str,
    msgspec.Meta(
        pattern=DURATION_PATTERN,
        description="refuse to retire a version called within this long, e.g. 7d",
    ),
]


def parse_duration(text: str) -> timedelta:
    """`"7d"` -> 7 days: a positive whole number and one unit (s, m, h, d, w), at most
    ten years. ValueError naming the rule otherwise."""
    match = _DURATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(
            f"{text!r} is not a duration: a whole number and a unit, s, m, h, d or w "
            '(e.g. "7d", "12h", "2s")'
        )
    value = timedelta(seconds=int(text.strip()[:-1]) * _UNITS[match.group(1)])
    if value > MAX_DURATION:
        raise ValueError(f"{text!r} is longer than ten years")
    return value


def format_duration(value: timedelta) -> str:
    """An exact spelling of a duration in its largest whole unit up to days (`7d`, `36h`)."""
    seconds = int(value.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds and seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


class RowLike(Protocol):
    @property
    def version(self) -> int | None: ...
    @property
    def decision(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def server(self) -> str: ...
    @property
    def toolset(self) -> str: ...
    @property
    def calls(self) -> int: ...
    @property
    def last_seen(self) -> datetime: ...


class DecisionCount(msgspec.Struct, frozen=True, omit_defaults=True):
    decision: str  # accepted | converted | refused
    calls: int
    reason: str | None = None  # refusals: the gate's reason


class ServerUsage(msgspec.Struct, frozen=True):
    name: str  # as the server reports itself
    toolset: str  # the toolset digest it reported last
    calls: int
    last_seen: datetime


class VersionUsage(msgspec.Struct, frozen=True, kw_only=True):
    """A version's calls in a window. `version` None: calls of no version (version-less
    calls refused with no version inferred)."""

    version: int | None
    calls: int
    last_seen: datetime | None
    decisions: list[DecisionCount]
    servers: list[ServerUsage]  # most calls first
    state: str | None = None  # the version's state now (None: no such version)


class ToolUsage(msgspec.Struct, frozen=True, kw_only=True):
    """`GET .../tools/{tool}/usage` and `.../versions/{n}/usage` (one entry)."""

    namespace: str
    tool: str
    since: datetime  # counts are kept per hour: the hour holding `since` counts whole
    until: datetime
    versions: list[VersionUsage]


def summarize(rows: Iterable[RowLike]) -> list[VersionUsage]:
    """One `VersionUsage` per version the rows name, newest version first (no version last)."""
    by_version: dict[int | None, list[RowLike]] = {}
    for row in rows:
        by_version.setdefault(row.version, []).append(row)
    answers = []
    for version, found in by_version.items():
        decisions: dict[tuple[str, str | None], int] = {}
        servers: dict[str, list[Any]] = {}
        for row in found:
            key = (row.decision, row.reason)
            decisions[key] = decisions.get(key, 0) + row.calls
            seen = servers.get(row.server)
            if seen is None:
                servers[row.server] = [row.toolset, row.calls, row.last_seen]
            else:
                seen[1] += row.calls
                if row.last_seen > seen[2]:
                    seen[0], seen[2] = row.toolset, row.last_seen
        answers.append(
            VersionUsage(
                version=version,
                calls=sum(decisions.values()),
                last_seen=max(row.last_seen for row in found),
                decisions=[
                    DecisionCount(decision, calls, reason)
                    for (decision, reason), calls in sorted(
                        decisions.items(), key=lambda item: (item[0][0], item[0][1] or "")
                    )
                ],
                servers=[
                    ServerUsage(name, toolset, calls, last)
                    for name, (toolset, calls, last) in sorted(
                        servers.items(), key=lambda item: (-item[1][1], item[0])
                    )
                ],
            )
        )
    answers.sort(key=lambda u: -1 if u.version is None else u.version, reverse=True)
    return answers


def idle(version: int) -> VersionUsage:
    """The usage of a version nobody called in the window."""
    return VersionUsage(version=version, calls=0, last_seen=None, decisions=[], servers=[])


def who_calls(usage: VersionUsage, *, limit: int = 3) -> str:
    """`srv-a, srv-b and 2 more` (the servers with the most calls first)."""
    names = [s.name for s in usage.servers]
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """What usage says about retiring a version: refused (called within `require_idle`),
    a warning (called within the warning window), or nothing."""

    refused: bool
    message: str | None  # None: no call in the window
    usage: VersionUsage
    idle_from: datetime | None = None  # when a refused retirement would be accepted


def retirement_evidence(
    tool: str,
    usage: VersionUsage,
    *,
    now: datetime,
    warn: timedelta,
    require_idle: timedelta | None,
) -> Evidence:
    """Judge a retirement of `usage.version` from its calls (`usage` covers at least the
    larger of `warn` and `require_idle`, ending `now`)."""
    last = usage.last_seen
    version = f"{tool} v{usage.version}"
    if require_idle is not None and last is not None and last > now - require_idle:
        idle_from = last + require_idle
        return Evidence(
            refused=True,
            message=(
                f"{version} is still called: {usage.calls:,} calls, the last at "
                f"{_stamp(last)}, by {who_calls(usage)}; require_idle "
                f"{format_duration(require_idle)} allows retiring it once nobody has called "
                f"it for that long (not before {_stamp(idle_from)})"
            ),
            usage=usage,
            idle_from=idle_from,
        )
    if last is not None and last > now - warn:
        return Evidence(
            refused=False,
            message=(
                f"{version} was called {usage.calls:,} times in the last "
                f"{format_duration(warn)} (the last at {_stamp(last)}, by {who_calls(usage)}); "
                "those callers now get schema_version_retired"
            ),
            usage=usage,
        )
    return Evidence(refused=False, message=None, usage=usage)


def retiring(
    retire: Iterable[int],
    deprecate: Iterable[tuple[int, datetime | None]],
    *,
    now: datetime,
    require_idle: timedelta | None,
) -> list[int]:
    """The versions a request takes out of service as the idle rule sees them, whatever
    the path (retire, deprecate, publish, apply): those it retires, and those it
    deprecates with a sunset that has passed or comes before `require_idle` from now
    (a version past its sunset is retired; one whose sunset comes sooner than the
    idleness asked for would be retired without it). Without `require_idle`, only a
    sunset that has passed retires. Each is judged by `retirement_evidence`."""
    soon = now + (require_idle or timedelta(0))
    found = set(retire)
    found.update(v for v, sunset in deprecate if sunset is not None and sunset <= soon)
    return sorted(found)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def callers_of(usages: Sequence[VersionUsage], version: int) -> VersionUsage:
    """The usage of `version` among `usages` (idle when absent)."""
    return next((u for u in usages if u.version == version), idle(version))
