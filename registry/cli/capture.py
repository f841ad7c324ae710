"""`registry capture`: a live server's surface as a directory of manifests.

    registry capture --namespace billing --output tools/billing -- python server.py
    registry capture --namespace billing --output tools/billing --url http://127.0.0.1:8765/mcp

The server is read with `registry.cli.live` (initialize, every tools/list page).
DIR then holds one manifest per tool (`namespace`, `tool`: YAML, valid against
`schemas/manifest.schema.json`) and `initialize.json`, the server's `initialize`
result as `PUT /v1/namespaces/{ns}/capabilities` takes it (seed 004's fixture;
`plan`, `apply` and `check` skip that file).

Files are written so that an unchanged server leaves them byte-identical:

* keys in a fixed order: `namespace`, `tool`, then the decisions kept (below); in
  the tool, `name`, `title`, `description`, `inputSchema`, `outputSchema`,
  `annotations`, `icons`, `execution`, `_meta`, then any other key by name; every
  object inside sorted by key. `initialize.json`: sorted keys, two-space indent.
* file names: `<tool name>.yaml`. A name the file system could confuse with
  another, or hide, is written `<name without leading dots>~<8 hex of the sha256
  of the name>.yaml` instead: names starting with a dot, names equal to another
  listed name but for case (on a case-insensitive disk they would be one file),
  and Windows device names (`con`, `nul`, `com1` ...). `~` is not allowed in a
  tool name, so such a file can never be another tool's plain name.
* a file whose content would not change is not rewritten (its formatting and
  comments stay).

DIR belongs to the capture for this namespace, at its top level: a manifest there
of this namespace whose tool is no longer listed (a stale file, or one of a listed
tool under another file name) is removed, and said so. What the new listing
drops against the manifests DIR held is reported as the breaking change it is
(`tool-removed`, or `tool-renamed` where the engine pairs it with a tool the
server now lists), and the server's `serverInfo.version` bump against DIR's
`initialize.json` is compared with the change (registry/policy/semver.py);
`--fail-on semver` exits 1, after writing, on a bump that does not match. Each
listed tool's risk findings against the manifest DIR held (a new tool: against
nothing) are printed too, `--fail-on risk` exiting 1 on one. Files of other namespaces,
files that are not manifests, and subdirectories are left alone. When an existing
manifest of a listed tool carries decisions (`retire`, `deprecate`, `converters`,
`aliases`), they are kept in the rewritten file: capture, add a decision, apply,
capture again.

Nothing is written unless the whole surface was read and every file validated
(the manifests are loaded back with `registry.manifests` and must equal what
the server listed). A new DIR is written under a temporary name and renamed into
place; in an existing DIR each file is replaced by a rename, so a file is either
old or new, never half written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from registry.cli.common import (
    EXIT_BREAKING,
    EXIT_OK,
    NAMESPACE_PATTERN,
    Failed,
    InputError,
    Verb,
    one_line,
    write_atomically,
)
from registry.cli.live import LiveServer, ServerFailure, Surface, read_surface_then
from registry.cli.releases import compare_listings
from registry.cli.render_release import semver_line, shown_checks
from registry.cli.report import risk_evidence
from registry.compat import Change
from registry.compat.jsonvalues import json_equal
from registry.compat.rules_tool import MCP_TOOL_FIELD_ORDER
from registry.documents import DocumentError, dump_yaml, parse_document, read_source
from registry.manifests import CAPTURED_INITIALIZE, MANIFEST_SUFFIXES, Manifest, collect_sources
from registry.policy.capabilities import CapabilityError, parse_initialize
from registry.policy.semver import SemverCheck
from registry.risks import Risk, scan

__all__ = ["VERBS", "fail_on_argument", "file_names", "live_manifests", "run_capture", "server_of"]

_T = TypeVar("_T")

DEFAULT_TIMEOUT = 30.0
_DECISIONS = ("retire", "deprecate", "converters", "aliases")
_DEVICE_NAMES = frozenset(
    {"con", "prn", "aux", "nul"} | {f"{port}{n}" for port in ("com", "lpt") for n in range(1, 10)}
)


# -- arguments shared with plan, apply and check (--from-server) ---------------------


def namespace_argument(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--namespace",
        metavar="NS",
        required=required,
        help="the namespace the server's tools belong to",
    )


def fail_on_argument(parser: argparse.ArgumentParser, when: str = "", lint: bool = False) -> None:
    """`--fail-on semver` and `risk` (repeatable; `lint` too where `lint` says so): what
    fails the run besides a breaking change (mcp-registry.yaml's `fail_on` adds to it)."""
    parser.add_argument(
        "--fail-on",
        action="append",
        choices=("semver", "lint", "risk") if lint else ("semver", "risk"),
        default=[],
        help=f"semver: exit 1 {when}when the release's serverInfo.version bump does not "
        "match the change of its tools (a breaking change needs a major bump, an additive "
        f"one a minor one); risk: exit 1 {when}on a risk finding (text aimed at the model, "
        "a link, hidden characters, a tool named, a weakened annotation)"
        + ("; lint: exit 1 on a finding of the configured lint rules" if lint else ""),
    )


def server_of(args: argparse.Namespace, url: str | None) -> LiveServer:
    """The server named on the command line: the command after `--`, or `url`."""
    command: list[str] = getattr(args, "server_command", None) or []
    if command and url:
        raise InputError("name the server once: a command after -- or a URL, not both")
    if url:
        if not url.startswith(("http://", "https://")):
            raise InputError(f"server URL {url!r} must start with http:// or https://")
        return LiveServer.http(url)
    if not command:
        raise InputError("no server: give its command after -- (stdio) or its URL")
    return LiveServer.stdio(command)


def checked_namespace(namespace: str | None) -> str:
    if not namespace:
        raise InputError("--namespace is required to read a live server")
    if not re.fullmatch(NAMESPACE_PATTERN, namespace):
        raise InputError(f"--namespace {namespace!r} is not a namespace name ({NAMESPACE_PATTERN})")
    return namespace


def read_server(server: LiveServer, timeout: float, then: Callable[[Surface], _T]) -> _T:
    """`then(surface)`, called while the server exits (see `read_surface_then`)."""
    if not timeout > 0:  # NaN too
        raise InputError("--timeout must be positive")
    try:
        return read_surface_then(server, timeout, then)
    except ServerFailure as failure:
        raise InputError(str(failure)) from None


# -- the manifests ---------------------------------------------------------------------


def file_names(names: Sequence[str]) -> dict[str, str]:
    """Tool name -> file name in DIR (the rule in the module docstring)."""
    folded = Counter(name.lower() for name in names)
    chosen: dict[str, str] = {}
    for name in names:
        plain = not name.startswith(".") and folded[name.lower()] == 1
        if plain and name.split(".", 1)[0].lower() not in _DEVICE_NAMES:
            chosen[name] = f"{name}.yaml"
        else:
            tag = hashlib.sha256(name.encode()).hexdigest()[:8]
            chosen[name] = f"{name.lstrip('.')}~{tag}.yaml"
    return chosen


def _ordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _ordered(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value


def manifest_document(
    namespace: str, definition: dict[str, Any], decisions: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest written for a tool, its keys in the documented order."""
    first = [key for key in MCP_TOOL_FIELD_ORDER if key in definition]
    rest = sorted(key for key in definition if key not in MCP_TOOL_FIELD_ORDER)
    tool = {key: _ordered(definition[key]) for key in (*first, *rest)}
    document: dict[str, Any] = {"namespace": namespace, "tool": tool}
    for key in _DECISIONS:
        if decisions and key in decisions:
            document[key] = decisions[key]
    return document


def _loaded(sources: list[tuple[str, bytes]], surface: Surface) -> list[Manifest]:
    """The manifests as `registry.manifests` reads them back; any refusal, or a tool
    that does not read back as the server listed it, is a Failed (nothing written)."""
    manifests, errors = collect_sources(sources)
    if errors:
        raise Failed([one_line(str(error)) for error in errors])
    listed = {tool["name"]: tool for tool in surface.tools}
    for manifest in manifests:
        if not json_equal(manifest.tool, listed[manifest.name]):
            raise Failed([f"{manifest.path}: does not read back as the server listed it"])
    return manifests


def live_manifests(namespace: str, surface: Surface) -> list[Manifest]:
    """The surface as manifests in memory (for --from-server): each one's path is
    `tools/list:<tool>`, and it has no text to point into."""
    sources = [
        (f"tools/list:{tool['name']}", dump_yaml(manifest_document(namespace, tool)).encode())
        for tool in surface.tools
    ]
    return [msgspec.structs.replace(manifest, text="") for manifest in _loaded(sources, surface)]


# -- writing DIR -----------------------------------------------------------------------


@dataclass
class _Outcome:
    lines: list[str] = field(default_factory=list)
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    gone: list[Change] = field(default_factory=list)  # tools DIR held that the server dropped
    semver: SemverCheck | None = None
    # each listed tool's risk findings against the manifest DIR held (none: from nothing)
    risks: list[tuple[str, Risk]] = field(default_factory=list)


@dataclass(frozen=True)
class _Existing:
    """A manifest of the namespace at the top of DIR."""

    path: Path
    tool: str
    document: dict[str, Any]


def _existing(directory: Path, namespace: str) -> list[_Existing]:
    found = []
    for path in sorted(directory.iterdir()):
        if (
            path.name.startswith(".")
            or not path.name.lower().endswith(MANIFEST_SUFFIXES)
            or not path.is_file()
        ):
            continue
        try:
            document = parse_document(read_source(str(path)), str(path))
        except DocumentError:
            continue  # not a manifest: not the capture's
        tool = document.get("tool") if isinstance(document, dict) else None
        name = tool.get("name") if isinstance(tool, dict) else None
        if document.get("namespace") == namespace and isinstance(name, str):
            found.append(_Existing(path, name, document))
    return found


def _unchanged(path: Path, document: Any) -> bool:
    try:
        return json_equal(parse_document(read_source(str(path)), str(path)), document)
    except DocumentError:
        return False


def write_capture(directory: Path, namespace: str, surface: Surface) -> _Outcome:
    """Write DIR (see the module docstring); raises Failed before writing anything
    when a file would not validate."""
    if directory.exists() and not directory.is_dir():
        raise Failed([f"{directory}: exists and is not a directory"])
    existing = _existing(directory, namespace) if directory.is_dir() else []
    by_tool = {entry.tool: entry for entry in existing}
    release = _release(directory, namespace, existing, surface)
    names = file_names([tool["name"] for tool in surface.tools])
    documents: dict[str, Any] = {}
    for tool in surface.tools:
        kept = by_tool.get(tool["name"])
        documents[names[tool["name"]]] = manifest_document(
            namespace, tool, kept.document if kept else None
        )
    contents = {name: dump_yaml(document).encode() for name, document in documents.items()}
    _loaded([(str(directory / name), content) for name, content in contents.items()], surface)
    _check_initialize_file(directory / CAPTURED_INITIALIZE)
    documents[CAPTURED_INITIALIZE] = surface.initialize
    contents[CAPTURED_INITIALIZE] = (
        json.dumps(surface.initialize, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    ).encode()

    outcome = _Outcome()
    if release is not None:
        outcome.gone, outcome.semver = release
    listed_names = [tool["name"] for tool in surface.tools]
    for tool in surface.tools:
        kept = by_tool.get(tool["name"])
        before = kept.document.get("tool") if kept else None
        others = [name for name in listed_names if name != tool["name"]]
        found = scan(before if isinstance(before, dict) else None, tool, others)
        outcome.risks += [(tool["name"], risk) for risk in found]
    if not directory.exists():
        _write_new(directory, contents)
        outcome.written = len(contents)
        outcome.lines = [f"{name}: written" for name in sorted(contents)]
        return outcome
    for name in sorted(contents):
        target = directory / name
        if target.is_file() and _unchanged(target, documents[name]):
            outcome.unchanged += 1
            outcome.lines.append(f"{name}: unchanged")
            continue
        try:
            write_atomically(str(target), contents[name])
        except InputError as error:
            raise Failed([str(error)]) from None
        outcome.written += 1
        outcome.lines.append(f"{name}: written")
    listed = {*names.values(), CAPTURED_INITIALIZE}
    for entry in existing:
        if entry.path.name in listed:
            continue
        why = (
            f"{entry.tool} is now in {names[entry.tool]}"
            if entry.tool in names
            else f"{entry.tool} is no longer listed"
        )
        try:
            entry.path.unlink()
        except OSError as error:
            raise Failed([f"{entry.path}: {error.strerror or error}"]) from None
        outcome.removed += 1
        outcome.lines.append(f"{entry.path.name}: removed ({why})")
    return outcome


def _release(
    directory: Path, namespace: str, existing: list[_Existing], surface: Surface
) -> tuple[list[Change], SemverCheck] | None:
    """Against the manifests DIR held (an earlier capture): the tools gone, and the
    version bump; None for a first capture."""
    if not existing:
        return None
    old = {
        entry.tool: entry.document["tool"]
        for entry in existing
        if isinstance(entry.document.get("tool"), dict)
    }
    new = {tool["name"]: tool for tool in surface.tools}
    before = None
    try:
        captured = parse_initialize(read_source(str(directory / CAPTURED_INITIALIZE)))
        before = captured.serverInfo.get("version")
    except (DocumentError, CapabilityError):
        pass  # no earlier initialize.json: the bump is not checkable
    after = surface.initialize.get("serverInfo", {}).get("version")
    versions = (
        before if isinstance(before, str) else None,
        after if isinstance(after, str) else None,
    )
    return compare_listings(namespace, old, new, versions)


def _check_initialize_file(path: Path) -> None:
    """An `initialize.json` already in DIR is replaced only if it is an initialize result."""
    if not path.exists():
        return
    try:
        parse_initialize(read_source(str(path)))
    except (DocumentError, CapabilityError):
        raise Failed(
            [
                f"{path}: exists and is not an initialize result; the capture writes the "
                "server's there: move it away"
            ]
        ) from None


def _write_new(directory: Path, contents: dict[str, bytes]) -> None:
    """A new DIR: written under a temporary name beside it, then renamed into place."""
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
        try:
            for name, content in contents.items():
                (temporary / name).write_bytes(content)
            os.chmod(temporary, 0o777 & ~_umask())
            temporary.rename(directory)
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
    except OSError as error:
        raise Failed([f"{directory}: {error.strerror or error}"]) from None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# -- the verb --------------------------------------------------------------------------


def _capture_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = (
        "registry capture --namespace NS --output DIR [--timeout S] "
        "(-- COMMAND [ARGS...] | --url URL)"
    )
    parser.epilog = (
        "The server's command comes after `--` (spoken to over stdio; it runs with this "
        "environment and working directory), or --url names a streamable HTTP endpoint. "
        "Exit 2, with nothing written, when the server cannot be read."
    )
    namespace_argument(parser, required=True)
    parser.add_argument(
        "--output",
        "-o",
        metavar="DIR",
        required=True,
        help="the directory of manifests to write (created if absent)",
    )
    parser.add_argument("--url", help="the server's streamable HTTP endpoint (…/mcp)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="time the server has to start, answer initialize and list every tool "
        f"(default {DEFAULT_TIMEOUT:g})",
    )
    fail_on_argument(parser, "(after writing) ")


def run_capture(args: argparse.Namespace) -> int:
    namespace = checked_namespace(args.namespace)
    server = server_of(args, args.url)
    directory = Path(args.output)

    def write(surface: Surface) -> tuple[Surface, _Outcome]:
        try:
            return surface, write_capture(directory, namespace, surface)
        except Failed as failed:
            raise InputError("; ".join(failed.lines)) from None

    surface, outcome = read_server(server, args.timeout, write)  # written as the server exits
    for line in outcome.lines:
        print(line)
    for change in outcome.gone:
        print(f"{change.kind.value}: {change.message} ({change.severity.value})")
    for check in shown_checks([outcome.semver] if outcome.semver is not None else []):
        print(semver_line(check))
    for tool, risk in outcome.risks:
        print(f"risk {risk.kind.value}: {tool} {risk.path}: {risk.message}")
        print(f"  evidence: {risk_evidence(risk)}")
    sys.stdout.flush()  # the file lines before the summary, on a terminal or a shared pipe
    count = len(surface.tools)
    pages = f"{surface.pages} page{'s' if surface.pages != 1 else ''}"
    print(
        f"captured {count} tool{'s' if count != 1 else ''} of {namespace} from {server.label} "
        f"({pages}) into {directory}: {outcome.written} written, {outcome.unchanged} "
        f"unchanged, {outcome.removed} removed",
        file=sys.stderr,
    )
    mismatch = outcome.semver is not None and outcome.semver.verdict == "mismatch"
    if mismatch and "semver" in args.fail_on:
        return EXIT_BREAKING
    return EXIT_BREAKING if outcome.risks and "risk" in args.fail_on else EXIT_OK


VERBS: list[Verb] = [
    Verb(
        "capture",
        "write a live MCP server's tools as manifests (and its initialize result) into a "
        "directory: -- COMMAND (stdio) or --url URL",
        _capture_arguments,
        run_capture,
        takes_command=True,
    ),
]
