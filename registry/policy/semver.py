"""Does a server's version bump match what changed in its tools? (`check`, `capture`)

    check = compare_versions("billing", "1.4.2", "1.5.0", Severity.BREAKING)
    check.verdict        # "mismatch": a breaking change needs a major bump (2.0.0)
    check.message        # the sentence every output format shows

A release names itself in `initialize`'s `serverInfo.version`. Where both
versions are semantic versions (semver.org 2.0.0, a leading `v` tolerated), the
bump must match the worst change of the release's tools: breaking needs a
major bump, additive a minor one, cosmetic a patch, identical any (or none);
a version that did not move while the tools changed, or went backwards, never
matches. Major version zero is initial development, where semver lets
anything change (item 4): any bump matches there, if there is one. A
pre-release of the next version (`2.0.0-rc.1`) is judged by its core; a move
between pre-releases of the same core carries no promise (item 9). Calendar
versions (a four-digit year first, `2025.6.1`) and anything else are not
checkable: the answer says so rather than guess.

The pattern is semver.org's own (a dependency for one regular expression and
a comparison of three integers is not worth its weight).
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from registry.compat import Severity

__all__ = ["SemverCheck", "compare_versions", "parse_semver"]

# semver.org's suggested regular expression, with a `v` tolerated in front
_SEMVER = re.compile(
    r"^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_CALVER_YEAR = re.compile(r"^v?(19|20|21)\d\d[.\-]")

Bump = Literal["major", "minor", "patch", "none"]
Verdict = Literal["ok", "mismatch", "not-checkable"]

# the bump each severity of change needs, and the bumps ranked
_NEEDS: dict[Severity, Bump] = {
    Severity.BREAKING: "major",
    Severity.ADDITIVE: "minor",
    Severity.COSMETIC: "patch",
    Severity.IDENTICAL: "none",
}
_RANK: dict[str, int] = {"none": 0, "patch": 1, "minor": 2, "major": 3}


class SemverCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The bump of one namespace's server against the change of its tools.

    `old`: the `serverInfo.version` the registry holds for the namespace (None:
    none known); `new`: the release's; `change`: the worst severity of its
    tools' changes (a tool removed is breaking, one added additive); `bump`:
    what the version did (`major` ... `none`, `downgrade`, `prerelease`);
    `needs`: the bump the change needs; `verdict`: `ok`, `mismatch` or
    `not-checkable`, with the reason in `message`."""

    namespace: str
    old: str | None
    new: str | None
    change: str
    verdict: Verdict
    message: str
    bump: str | None = None
    needs: str | None = None


def parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]] | None:
    """(major, minor, patch, pre-release identifiers) of a semantic version, else None."""
    found = _SEMVER.match(text.strip())
    if found is None:
        return None
    major, minor, patch, pre = found.group(1, 2, 3, 4)
    return int(major), int(minor), int(patch), tuple(pre.split(".")) if pre else ()


def _bump(old: tuple[int, int, int], new: tuple[int, int, int]) -> str:
    if new < old:
        return "downgrade"
    if new[0] != old[0]:
        return "major"
    if new[1] != old[1]:
        return "minor"
    return "patch" if new[2] != old[2] else "none"


def compare_versions(
    namespace: str, old: str | None, new: str | None, change: Severity
) -> SemverCheck:
    """Whether the bump from `old` to `new` matches `change` (the rules above)."""

    def answer(verdict: Verdict, message: str, **more: str) -> SemverCheck:
        return SemverCheck(
            namespace=namespace,
            old=old,
            new=new,
            change=change.value,
            verdict=verdict,
            message=message,
            **more,
        )

    if new is None:
        return answer("not-checkable", "the release names no serverInfo.version")
    if old is None:
        return answer(
            "not-checkable",
            f"the registry holds no earlier serverInfo.version for {namespace} to compare "
            f"{new} with (apply --from-server, or apply a directory captured with its "
            "initialize.json, stores one)",
        )
    for version in (old, new):
        if _CALVER_YEAR.match(version):  # (2025.6.1 parses as semver, and means a date)
            return answer(
                "not-checkable", f"{version!r} is a calendar version: the bump is not checkable"
            )
        if parse_semver(version) is None:
            return answer(
                "not-checkable", f"{version!r} is no semantic version: the bump is not checkable"
            )
    was, now = parse_semver(old), parse_semver(new)
    assert was is not None and now is not None
    bump = _bump(was[:3], now[:3])
    needs = _NEEDS[change]
    if bump == "none" and now[3] != was[3] and (now[3] or was[3]):
        return answer(
            "ok",
            f"{old} -> {new} moves between pre-releases of {now[0]}.{now[1]}.{now[2]}, which "
            "carry no compatibility promise (semver item 9)",
            bump="prerelease",
            needs=needs,
        )
    if bump == "downgrade":
        return answer("mismatch", f"{old} -> {new} goes backwards", bump=bump, needs=needs)
    if bump == "none" and needs != "none":
        return answer(
            "mismatch",
            f"serverInfo.version stayed {new} while the tools changed ({change.value}): "
            f"the change needs a {needs} bump ({_next(was[:3], needs)})",
            bump=bump,
            needs=needs,
        )
    if was[0] == 0 and now[0] == 0:
        return answer(
            "ok",
            f"{old} -> {new}: major version zero is initial development, where semver lets "
            f"anything change (item 4); the change is {change.value}",
            bump=bump,
            needs=needs,
        )
    if _RANK[bump] < _RANK[needs]:
        return answer(
            "mismatch",
            f"{old} -> {new} is a {bump} bump, but the change is {change.value}: it needs a "
            f"{needs} bump ({_next(was[:3], needs)})",
            bump=bump,
            needs=needs,
        )
    if bump == "none":
        return answer(
            "ok",
            f"{old} -> {new}: the version stayed, and so did the tools",
            bump=bump,
            needs=needs,
        )
    article = "an" if change.value[0] in "aeiou" else "a"
    return answer(
        "ok",
        f"{old} -> {new} is a {bump} bump, enough for {article} {change.value} change",
        bump=bump,
        needs=needs,
    )


def _next(version: tuple[int, int, int], bump: str) -> str:
    major, minor, patch = version
    if bump == "major":
        return f"{major + 1}.0.0"
    if bump == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"
