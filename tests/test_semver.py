"""Issue 31, item 6: the server's `serverInfo.version` bump against the change of
its tools, where the version is semver (breaking needs a major bump, additive a
minor one; major version zero as semver says; CalVer and others not checkable),
in `check` (a live server, DIR's captured `initialize.json`, the manifests'
`server_version`) and `capture`; `--fail-on semver` fails on a mismatch. The
shape of the issue: releases carrying breaking changes shipped as minor or
patch bumps, and nothing said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.cli import EXIT_BREAKING, EXIT_OK
from registry.compat import Severity
from registry.policy.semver import compare_versions
from tests.api.conftest import ADMIN_TOKEN, Registry
from tests.test_capture import (
    capture,
    listing,
    registry,
    registry_cli,
    registry_cli_async,
    tool,
    tools_file,
)

__all__ = ["registry"]  # tests/api's live registry fixture

B, A, C, SAME = Severity.BREAKING, Severity.ADDITIVE, Severity.COSMETIC, Severity.IDENTICAL


@pytest.mark.parametrize(
    ("old", "new", "change", "verdict", "bump"),
    [
        ("1.4.2", "2.0.0", B, "ok", "major"),
        ("1.4.2", "1.5.0", B, "mismatch", "minor"),
        ("1.4.2", "1.4.3", B, "mismatch", "patch"),
        ("1.4.2", "1.5.0", A, "ok", "minor"),
        ("1.4.2", "1.4.3", A, "mismatch", "patch"),
        ("1.4.2", "1.4.3", C, "ok", "patch"),
        ("1.4.2", "1.4.2", SAME, "ok", "none"),
        ("1.4.2", "1.4.2", C, "mismatch", "none"),
        ("1.4.2", "1.3.0", A, "mismatch", "downgrade"),
        ("v1.4.2", "v2.0.0", B, "ok", "major"),
        ("0.6.2", "0.6.3", B, "ok", "patch"),  # initial development: anything may change
        ("0.6.2", "0.6.2", B, "mismatch", "none"),  # ... but not under the same version
        ("1.9.0", "2.0.0-rc.1", B, "ok", "major"),
        ("2.0.0-rc.1", "2.0.0-rc.2", B, "ok", "prerelease"),
        ("2025.6.1", "2025.7.0", B, "not-checkable", None),
        ("1.2", "1.3", B, "not-checkable", None),
        (None, "1.0.0", B, "not-checkable", None),
    ],
)
def test_a_bump_is_checked_against_the_change(
    old: str | None, new: str, change: Severity, verdict: str, bump: str | None
) -> None:
    check = compare_versions("ns", old, new, change)
    assert (check.verdict, check.bump) == (verdict, bump), check.message
    assert check.message


def test_the_message_names_the_bump_needed() -> None:
    check = compare_versions("ns", "1.4.2", "1.5.0", B)
    assert check.message == (
        "1.4.2 -> 1.5.0 is a minor bump, but the change is breaking: it needs a major bump (2.0.0)"
    )
    calver = compare_versions("ns", "2025.6.1", "2025.7.0", B)
    assert "a calendar version" in calver.message


def _verb(name: str, registry: Registry, served: Path, version: str, *more: str) -> list[str]:
    return [
        name,
        "--namespace",
        "live",
        "--from-server",
        "--url",
        registry.url,
        "--token",
        ADMIN_TOKEN,
        "--create-namespace",
        "live",
        *more,
        "--",
        *listing(served, "--version", version),
    ]


async def test_check_from_server_says_a_minor_bump_broke_callers(
    registry: Registry, tmp_path: Path
) -> None:
    """apply --from-server stores 1.2.0 (its initialize result); the next release
    drops a tool in a minor bump."""
    served = tools_file(tmp_path / "t.json", [tool("lookup"), tool("fetch")])
    assert (await registry_cli_async(*_verb("apply", registry, served, "1.2.0"))).code == 0
    tools_file(served, [tool("lookup")])
    checked = await registry_cli_async(*_verb("check", registry, served, "1.3.0"))
    assert checked.code == EXIT_BREAKING, checked  # fetch is gone, undecided
    assert "live/fetch (tool-removed: no longer held)" in checked.out
    assert (
        "semver live: 1.2.0 -> 1.3.0 is a minor bump, but the change is breaking: it needs "
        "a major bump (2.0.0) (mismatch)"
    ) in checked.out
    retired = [*_verb("check", registry, served, "1.3.0", "--retire-removed", "--format", "json")]
    answer = json.loads((await registry_cli_async(*retired)).out)
    assert answer["accepted"] is True  # retired on purpose: the check itself passes ...
    assert [(c["old"], c["new"], c["verdict"]) for c in answer["semver"]] == [
        ("1.2.0", "1.3.0", "mismatch")
    ]
    failing = [
        *_verb("check", registry, served, "1.3.0", "--retire-removed", "--fail-on", "semver")
    ]
    failed = await registry_cli_async(*failing)
    assert failed.code == EXIT_BREAKING, failed  # ... unless a mismatch fails it
    assert (
        failed.out.rstrip()
        .splitlines()[-1]
        .startswith(
            "check failed: serverInfo.version (--fail-on semver): 1.2.0 -> 1.3.0 is a minor bump"
        )
    )
    major = [*_verb("check", registry, served, "2.0.0", "--retire-removed", "--fail-on", "semver")]
    assert (await registry_cli_async(*major)).code == EXIT_OK


async def test_check_of_a_directory_reads_its_captured_version_or_server_version(
    registry: Registry, tmp_path: Path
) -> None:
    """capture writes initialize.json beside the manifests; apply stores it, and the next
    capture's check compares its version; a manifest's server_version says the same."""
    served = tools_file(tmp_path / "t.json", [tool("lookup")])
    directory = tmp_path / "live"
    assert (
        capture(directory, "--", *listing(served, "--version", "3.1.0"), namespace="live").code == 0
    )
    online = ["--url", registry.url, "--token", ADMIN_TOKEN]
    applied = await registry_cli_async(
        "apply", str(directory), *online, "--create-namespace", "live"
    )
    assert applied.code == 0, applied
    assert "capabilities of live" in applied.err  # its initialize.json, stored
    tools_file(served, [tool("lookup", q={"type": "string"}, limit={"type": "integer"})])
    assert (
        capture(directory, "--", *listing(served, "--version", "3.1.1"), namespace="live").code == 0
    )
    checked = await registry_cli_async("check", str(directory), *online, "--fail-on", "semver")
    assert checked.code == EXIT_BREAKING, checked
    assert "3.1.0 -> 3.1.1 is a patch bump, but the change is additive: it needs a minor" in (
        checked.out
    )
    manifest = directory / "lookup.yaml"
    manifest.write_text(manifest.read_text() + "server_version: 3.2.0\n")
    passed = await registry_cli_async("check", str(directory), *online, "--fail-on", "semver")
    assert passed.code == EXIT_OK, passed
    assert "3.1.0 -> 3.2.0 is a minor bump, enough for an additive change (ok)" in passed.out


def test_capture_reports_what_the_server_dropped_and_its_bump(tmp_path: Path) -> None:
    echo = tool("echo", message={"type": "string"})
    served = tools_file(
        tmp_path / "t.json", [tool("add"), echo, tool("print", n={"type": "number"})]
    )
    directory = tmp_path / "everything"
    first = capture(directory, "--", *listing(served, "--version", "0.9.0"))
    assert first.code == 0, first
    assert "tool-removed" not in first.out and "semver" not in first.out  # a first capture
    renamed = dict(tool("add"), name="get-sum")
    tools_file(served, [renamed, tool("print", n={"type": "number"})])
    again = capture(directory, "--", *listing(served, "--version", "1.0.0"))
    assert again.code == 0, again
    assert 'tool-renamed: the tool was renamed from "add" to "get-sum"; calls to "add" fail' in (
        again.out
    )
    assert 'tool-removed: tool "echo" is no longer served; calls to it fail (breaking)' in again.out
    assert "semver ns: 0.9.0 -> 1.0.0 is a major bump, enough for a breaking change (ok)" in (
        again.out
    )
    tools_file(served, [tool("print", n={"type": "number"})])
    patch = registry_cli(
        "capture",
        "--namespace",
        "ns",
        "-o",
        str(directory),
        "--fail-on",
        "semver",
        "--",
        *listing(served, "--version", "1.0.1"),
    )
    assert patch.code == EXIT_BREAKING, patch
    assert "1.0.0 -> 1.0.1 is a patch bump, but the change is breaking" in patch.out
    assert not (directory / "get-sum.yaml").exists()  # written all the same
