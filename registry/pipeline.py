"""Release-pipeline verbs: `registry plan DIR`, `registry apply DIR`, `registry check DIR`.

    registry plan tools/                         # what applying tools/ would do (exit 1: refused)
    registry apply tools/                        # all of it lands, or none of it (re-run: no-op)
    registry check tools/ --format github        # a CI gate: exit 1 on an undecided breaking change
    registry check tools/ --against-file toolset.json   # the same gate, offline

`plan` and `check` send the manifests of DIR (`registry.manifests`) to
`POST {url}/v1/apply?plan=true`; `apply` sends them to `POST {url}/v1/apply`,
which applies the bundle in one transaction. `check --against-file` needs no
network: it rebuilds each tool's stored state from a saved toolset (the
payload of `GET /v1/namespaces/{ns}/toolset`, as `registry sync` writes it)
and runs the same planner (`registry.policy.plan.plan_tool`) locally.

Output (`--format`): `text` (a table and a line per change), `json` (the
`PlanAnswer`, `schemas/plan.schema.json`), `github` (workflow commands,
`::error file=...,line=...` at the manifest line of the changed property;
with `GITHUB_STEP_SUMMARY` set, the markdown report is appended there too),
`markdown` (a pull-request comment). Every format shows breaking changes
accepted on purpose (a manifest's `accept`, the namespace policy) as accepted,
with the reason, and the namespace policies of DIR's policy manifests.

Exit codes (registry.cli): 0 ok; 1 a breaking change lacks its decision, or
the registry refused the bundle (409); 2 bad manifests, a bad toolset file,
an unreachable registry, or any other problem answer (401, 403, 422, 5xx).

This module is imported by `registry.cli` to register its verbs, and imports
`Verb`, `InputError` and the exit codes from it. To keep both import orders
working (`registry.cli` first, as the console script does, or this module
first), the names of `registry.cli` are imported when they are used, and
`PIPELINE_VERBS` is built on first access (a module `__getattr__`).

Base install only: httpx and msgspec, no service imports.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO

import httpx
import msgspec

from registry.canonical import DigestError, digest
from registry.compat import Change, ChangeReport, ClassificationError, Severity
from registry.manifests import Manifest, ManifestError, PolicyManifest, collect_bundle
from registry.policy.acceptance import Acceptance, NamespacePolicy
from registry.policy.plan import (
    ApplyRequest,
    NamespacePlan,
    PlanAnswer,
    PolicyPlan,
    ToolPlan,
    plan_tool,
)
from registry.policy.publishing import Decision, PolicyError
from registry.policy.routes import RouteFinder, VersionLike

if TYPE_CHECKING:
    from registry.cli import Verb

__all__ = ["FORMATS", "PIPELINE_VERBS", "run_apply", "run_check", "run_plan"]

FORMATS = ("text", "json", "github", "markdown")
_PROG = "registry"
_DEFAULT_TIMEOUT = 30.0
_MARKDOWN_MARKER = "<!-- mcp-tool-registry:plan -->"

Mode = Literal["plan", "apply", "check"]


# -- errors --------------------------------------------------------------------------


class _Failed(Exception):
    """One or more `registry: ...` lines on stderr, then an exit code."""

    def __init__(self, lines: Sequence[str], code: int = 2) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)
        self.code = code


def _input_error(message: str) -> NoReturn:
    from registry.cli import InputError

    raise InputError(" ".join(message.split()))


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- arguments ---------------------------------------------------------------------------


def _common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory",
        metavar="DIR",
        help="the manifests: a directory searched recursively for *.yaml, *.yml and *.json "
        "(hidden files and directories skipped), or one manifest file",
    )
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument(
        "--token",
        help="a bearer token with <namespace>:publish for every namespace of DIR "
        "(env REGISTRY_TOKEN)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="text: a table; json: schemas/plan.schema.json; github: workflow commands "
        "at the manifest lines; markdown: a pull-request comment (default text)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT_TIMEOUT,
        help=f"seconds to wait for the registry (default {_DEFAULT_TIMEOUT:g})",
    )


def _check_arguments(parser: argparse.ArgumentParser) -> None:
    _common_arguments(parser)
    parser.add_argument(
        "--against-file",
        metavar="TOOLSET",
        help="check offline against a saved toolset (the payload of "
        "GET /v1/namespaces/{ns}/toolset, e.g. from `registry sync NS -o toolset.json`); "
        "no network is used",
    )


# -- the verbs -----------------------------------------------------------------------------


def run_plan(args: argparse.Namespace) -> int:
    return _run(args, "plan")


def run_apply(args: argparse.Namespace) -> int:
    return _run(args, "apply")


def run_check(args: argparse.Namespace) -> int:
    return _run(args, "check")


def _run(args: argparse.Namespace, mode: Mode) -> int:
    from registry.cli import EXIT_BREAKING, EXIT_OK

    out, err = sys.stdout, sys.stderr
    against = getattr(args, "against_file", None)
    try:
        manifests, policies = _load(args.directory, args.format, out)
        if against:
            answer = _offline_answer(manifests, policies, against)
            refusal = None
        else:
            url, token = _endpoint(args)
            client = _Client(url, token, args.timeout)
            if mode == "apply" and err.isatty():
                noun = "manifest" if len(manifests) == 1 else "manifests"
                print(f"{_PROG}: applying {len(manifests)} {noun} to {url} ...", file=err)
            answer, refusal = client.apply(manifests, policies, plan=mode != "apply")
    except _Failed as failed:
        for line in failed.lines:
            print(f"{_PROG}: {line}", file=err)
        return failed.code
    report = _Report(mode, answer, manifests, offline=bool(against), policies=policies)
    _render(report, args.format, out)
    if args.format == "github":
        _append_step_summary(report)
    if mode == "apply" and err.isatty():
        _progress(answer, err)
    if refusal is not None:
        print(f"{_PROG}: {refusal}", file=err)
    if mode == "apply":
        return EXIT_OK if answer.applied else EXIT_BREAKING
    return EXIT_OK if answer.accepted else EXIT_BREAKING


def _endpoint(args: argparse.Namespace) -> tuple[str, str | None]:
    url = args.url or os.environ.get("REGISTRY_URL")
    if not url:
        hint = " (or check offline with --against-file)" if hasattr(args, "against_file") else ""
        _input_error(f"no registry URL: pass --url or set REGISTRY_URL{hint}")
    if not url.startswith(("http://", "https://")):
        _input_error(f"registry URL {url!r} must start with http:// or https://")
    if args.timeout <= 0:
        _input_error("--timeout must be positive")
    token = args.token or os.environ.get("REGISTRY_TOKEN") or None
    return url.rstrip("/"), token


def _load(
    directory: str, output_format: str, out: TextIO
) -> tuple[list[Manifest], list[PolicyManifest]]:
    manifests, policies, errors = collect_bundle(directory)
    if errors:
        if output_format == "github":
            for error in errors:
                out.write(_manifest_error_command(error))
        raise _Failed([_one_line(str(error)) for error in errors])
    return manifests, policies


def _manifest_error_command(error: ManifestError) -> str:
    props = {"file": _display_path(error.path)}
    if error.line is not None:
        props["line"] = str(error.line)
        if error.column is not None:
            props["col"] = str(error.column)
    props["title"] = "invalid manifest"
    message = f"{error.pointer}: {error.message}" if error.pointer else error.message
    return _command("error", props, message)


def _progress(answer: PlanAnswer, err: TextIO) -> None:
    for name in _new_namespaces(answer):
        print(f"namespace {name}: {'created' if answer.applied else 'not created'}", file=err)
    for step in answer.policies:
        if step.action == "set":
            done = "set" if answer.applied else "not set"
            print(f"namespace {step.namespace}: policy {done}", file=err)
    total = len(answer.tools)
    for index, tool in enumerate(answer.tools, 1):
        if not answer.applied:
            status = "refused" if not tool.accepted else "not applied"
        elif tool.action == "create":
            status = f"created v{tool.version}"
        elif tool.action == "new-version":
            status = f"published v{tool.version}"
        elif tool.lifecycle or any(a.action != "unchanged" for a in tool.aliases):
            status = f"v{tool.version} unchanged, lifecycle and aliases updated"
        else:
            status = f"v{tool.version} unchanged"
        print(f"[{index}/{total}] {tool.namespace}/{tool.tool}: {status}", file=err)


# -- the registry -----------------------------------------------------------------------------


class _Client:
    def __init__(self, url: str, token: str | None, timeout: float) -> None:
        self.url = url
        self.token = token
        self.timeout = timeout

    def apply(
        self, manifests: Sequence[Manifest], policies: Sequence[PolicyManifest], *, plan: bool
    ) -> tuple[PlanAnswer, str | None]:
        """The plan (or the applied plan); a 409 refusal answers its plan and a line
        saying why. Any other failure raises `_Failed` (exit 2)."""
        endpoint = f"{self.url}/v1/apply" + ("?plan=true" if plan else "")
        headers = {"Accept": "application/json, application/problem+json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        bundle = ApplyRequest(
            manifests=[m.to_body() for m in manifests],
            policies=[p.to_body() for p in policies] if policies else msgspec.UNSET,
        )
        body = msgspec.json.encode(bundle)
        headers["Content-Type"] = "application/json"
        try:
            with httpx.Client(timeout=self.timeout, follow_redirects=False) as client:
                response = client.post(endpoint, content=body, headers=headers)
        except httpx.HTTPError as exc:
            reason = _one_line(str(exc)) or type(exc).__name__
            raise _Failed([f"cannot reach the registry at {endpoint}: {reason}"]) from None
        if response.status_code == 200:
            return _decode_answer(endpoint, response.content), None
        problem = _problem(response)
        if response.status_code == 409:
            reports = problem.get("reports")
            if isinstance(reports, dict):
                answer = _decode_answer(endpoint, json.dumps(reports).encode())
                return answer, _problem_line(endpoint, response, problem, manifests, policies)
            line = _problem_line(endpoint, response, problem, manifests, policies)
            raise _Failed([line], code=1)
        line = _problem_line(endpoint, response, problem, manifests, policies)
        if response.status_code == 401 and not self.token:
            line += " (pass --token or set REGISTRY_TOKEN)"
        raise _Failed([line])


def _decode_answer(endpoint: str, content: bytes) -> PlanAnswer:
    try:
        return msgspec.json.decode(content, type=PlanAnswer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _Failed([f"{endpoint}: not a plan answer: {_one_line(str(exc))}"]) from None


def _problem(response: httpx.Response) -> dict[str, Any]:
    try:
        problem = response.json()
    except ValueError:
        return {"detail": _one_line(response.text)[:200]}
    return problem if isinstance(problem, dict) else {"detail": _one_line(str(problem))[:200]}


def _problem_line(
    endpoint: str,
    response: httpx.Response,
    problem: dict[str, Any],
    manifests: Sequence[Manifest],
    policies: Sequence[PolicyManifest] = (),
) -> str:
    """`URL answered 422 (converter-unverified): file:line:col: /pointer: detail`."""
    status = response.status_code
    kind = str(problem.get("type") or "").rsplit("/", 1)[-1] or response.reason_phrase
    detail = _one_line(str(problem.get("detail") or problem.get("title") or ""))
    where = ""
    pointer = problem.get("pointer")
    for prefix, files, fallback in (
        ("/manifests/", manifests, "/tool/name"),
        ("/policies/", policies, "/policy"),
    ):
        if not (isinstance(pointer, str) and pointer.startswith(prefix)):
            continue
        index_text, _, rest = pointer.removeprefix(prefix).partition("/")
        if index_text.isdigit() and int(index_text) < len(files):
            manifest = files[int(index_text)]
            inner = f"/{rest}" if rest else ""
            detail = detail.removeprefix(f"{manifest.path}: ").removeprefix(f"{pointer}: ")
            where = _located(manifest, inner or fallback) + (f": {inner}" if inner else "")
    text = f"{endpoint} answered {status} ({kind})"
    if where:
        text += f": {where}"
    return f"{text}: {detail}" if detail else text


def _located(manifest: Manifest | PolicyManifest, pointer: str) -> str:
    """`file:line:column` of the value at `pointer` (or of its nearest ancestor)."""
    position = manifest.position(pointer, nearest=True)
    return f"{manifest.path}:{position[0]}:{position[1]}" if position else manifest.path


# -- offline: a saved toolset ---------------------------------------------------------------


class _Version(msgspec.Struct, frozen=True):
    version: int
    digest: str
    state: str
    definition: dict[str, Any]
    sunset: datetime | None = None


class _Converter(msgspec.Struct, frozen=True):
    from_version: int
    to_version: int
    ops: list[dict[str, Any]]


class _Alias(msgspec.Struct, frozen=True):
    name: str
    target_tool: str
    contract_tool: str
    contract_version: int


class _State(msgspec.Struct, frozen=True):
    tool: str
    versions: list[_Version]
    converters: list[_Converter]
    aliases: list[_Alias]
    next_version: int


class _OfflineFinder(RouteFinder):
    """The route finder over a saved toolset: the identity steps of the saved routes
    are known to hold, and a retired version whose definition the toolset does not
    carry (`unknown`) can be neither classified nor stepped from."""

    def __init__(self, identity: set[tuple[int, int]], unknown: set[int]) -> None:
        super().__init__()
        self.identity = identity
        self.unknown = unknown

    def report(self, old: VersionLike, new: VersionLike) -> ChangeReport:
        for version in (old, new):
            if version.version in self.unknown:
                raise PolicyError(
                    "offline-unverifiable",
                    f"version {version.version} is retired and the saved toolset does not "
                    "carry its definition, so it cannot be compared offline; check against "
                    "the registry instead",
                )
        return super().report(old, new)

    def is_identity_step(self, old: VersionLike, new: VersionLike) -> bool:
        if (old.version, new.version) in self.identity:
            return True
        if old.version in self.unknown or new.version in self.unknown:
            return False
        return super().is_identity_step(old, new)


@dataclass
class _Saved:
    """One tool of a saved toolset, as the planner reads it."""

    state: _State
    finder: _OfflineFinder
    unknown: set[int] = field(default_factory=set)


def _read_toolset(path: str) -> tuple[str, dict[str, Any]]:
    from registry.sdk.toolset import Toolset, ToolsetError

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise _Failed([f"{path}: {exc.strerror or exc}"]) from None
    try:
        toolset = Toolset.from_json(data)
    except ToolsetError as exc:
        raise _Failed([f"{path}: {_one_line(str(exc))}"]) from None
    raw: dict[str, Any] = json.loads(data)
    return toolset.namespace, raw


def _saved_tools(raw: dict[str, Any]) -> tuple[dict[str, _Saved], list[_Alias]]:
    aliases = [
        _Alias(
            name=a["name"],
            target_tool=a["target"],
            contract_tool=a["contract"]["tool"],
            contract_version=int(a["contract"]["version"]),
        )
        for a in raw.get("aliases", [])
    ]
    tools: dict[str, _Saved] = {}
    for entry in raw.get("tools", []):
        name: str = entry["name"]
        versions: dict[int, _Version] = {}
        routes: list[list[dict[str, Any]]] = []
        for served in entry.get("versions", []):
            sunset = served.get("sunset")
            versions[served["version"]] = _Version(
                version=served["version"],
                digest=served["digest"],
                state=served["state"],
                definition=served["definition"],
                sunset=_parse_time(sunset) if sunset else None,
            )
            routes.append(served.get("route") or [])
        # A retired version carries no definition in the toolset, except when an alias
        # speaks it (the alias entry holds its contract's definition).
        contracts = {
            (a["contract"]["tool"], int(a["contract"]["version"])): a["definition"]
            for a in raw.get("aliases", [])
        }
        unknown: set[int] = set()
        for retired in entry.get("retired", []):
            number = retired["version"]
            definition = contracts.get((name, number))
            if definition is None or _digest_or_none(definition) != retired["digest"]:
                definition = {}
                unknown.add(number)
            versions[number] = _Version(number, retired["digest"], "retired", definition)
        for alias in raw.get("aliases", []):
            if alias["target"] == name and alias["contract"]["tool"] == name:
                routes.append(alias.get("route") or [])
        converters: dict[tuple[int, int], _Converter] = {}
        identity: set[tuple[int, int]] = set()
        for route in routes:
            for step in route:
                pair = (int(step["from"]), int(step["to"]))
                if step.get("ops"):
                    converters.setdefault(pair, _Converter(pair[0], pair[1], list(step["ops"])))
                else:
                    identity.add(pair)
        ordered = [versions[n] for n in sorted(versions)]
        state = _State(
            tool=name,
            versions=ordered,
            converters=sorted(converters.values(), key=lambda c: (c.from_version, c.to_version)),
            aliases=[a for a in aliases if name in (a.target_tool, a.contract_tool)],
            next_version=max(versions, default=0) + 1,
        )
        tools[name] = _Saved(state, _OfflineFinder(identity, unknown), unknown)
    return tools, aliases


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))


def _digest_or_none(definition: Any) -> str | None:
    try:
        return digest(definition)
    except DigestError:
        return None


def _offline_policy(
    namespace: str, raw: dict[str, Any], policies: Sequence[PolicyManifest]
) -> NamespacePolicy | None:
    """The policy an offline check plans under: DIR's policy manifest of the namespace,
    else gating off when the saved toolset says so (its relaxations are not saved)."""
    declared = next((p.policy for p in policies if p.namespace == namespace), None)
    if declared is not None:
        return declared
    if raw.get("gating") is False:
        return NamespacePolicy(gating=False, reason="the saved toolset says gating is off")
    return None


def _offline_answer(
    manifests: Sequence[Manifest], policies: Sequence[PolicyManifest], path: str
) -> PlanAnswer:
    namespace, raw = _read_toolset(path)
    mismatched: list[Manifest | PolicyManifest] = [m for m in manifests if m.namespace != namespace]
    mismatched += [p for p in policies if p.namespace != namespace]
    if mismatched:
        raise _Failed(
            [
                f"{_located(m, '/namespace')}: /namespace: namespace {m.namespace!r} is not the "
                f"namespace of the saved toolset {path} ({namespace!r}); check each namespace "
                "against its own toolset"
                for m in mismatched
            ]
        )
    tools, aliases = _saved_tools(raw)
    policy = _offline_policy(namespace, raw, policies)
    plans: list[ToolPlan] = []
    errors: list[str] = []
    for manifest in manifests:
        saved = tools.get(manifest.name)
        if saved is None:
            saved = _Saved(
                _State(manifest.name, [], [], [], 1),
                _OfflineFinder(set(), set()),
            )
        try:
            _unverifiable_converters(manifest, saved)
            body = manifest.to_body()
            plans.append(
                plan_tool(saved.state, body, manifest.digest, saved.finder, aliases, policy)
            )
        except PolicyError as exc:
            pointer = exc.pointer or "/tool"
            errors.append(f"{_located(manifest, pointer)}: {pointer}: {_one_line(exc.message)}")
        except ClassificationError as exc:
            pointer = "/tool" + exc.pointer
            errors.append(f"{_located(manifest, pointer)}: {pointer}: {_one_line(exc.message)}")
    if errors:
        raise _Failed(errors)
    return PlanAnswer(
        accepted=all(p.accepted for p in plans),
        applied=False,
        tools=plans,
        # a saved toolset is the toolset of a namespace that exists
        namespaces=[NamespacePlan(name=namespace, action="unchanged")] if manifests else [],
        # the stored policy is not in a saved toolset: DIR's policy is shown as set
        policies=[
            PolicyPlan(namespace=p.namespace, action="set", policy=p.policy, source=p.path)
            for p in policies
        ],
    )


def _unverifiable_converters(manifest: Manifest, saved: _Saved) -> None:
    """A converter from a retired version the toolset has no definition of cannot be
    verified offline; say so rather than report it as invalid."""
    existing = next((v for v in saved.state.versions if v.digest == manifest.digest), None)
    stored = {(c.from_version, c.to_version) for c in saved.state.converters}
    for index, converter in enumerate(manifest.converters):
        if converter.from_ not in saved.unknown:
            continue
        if existing is not None and (converter.from_, existing.version) in stored:
            continue
        raise PolicyError(
            "offline-unverifiable",
            f"the converter from version {converter.from_} cannot be verified offline: "
            f"version {converter.from_} is retired and the saved toolset does not carry its "
            "definition (converters from retired versions are verified by the registry: "
            "run `registry check` with --url)",
            pointer=f"/converters/{index}/from",
        )


# -- what the renderers read ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Finding:
    """A change to show: `decided` is False for a breaking change no decision covers;
    `accepted` is set for a breaking change accepted on purpose."""

    plan: ToolPlan
    change: Change
    versions: list[int]  # the older versions it breaks (from the decisions), if any
    decided: bool
    accepted: Acceptance | None = None


def _acceptance(plan: ToolPlan, change: Change) -> Acceptance | None:
    return next(
        (a for a in plan.acceptances if (a.kind, a.path) == (change.kind.value, change.path)),
        None,
    )


class _Report:
    def __init__(
        self,
        mode: Mode,
        answer: PlanAnswer,
        manifests: Sequence[Manifest],
        *,
        offline: bool,
        policies: Sequence[PolicyManifest] = (),
    ) -> None:
        self.mode = mode
        self.answer = answer
        self.offline = offline
        self.manifests = {m.key: m for m in manifests}
        self.policies = {p.namespace: p for p in policies}

    def manifest(self, plan: ToolPlan) -> Manifest | None:
        return self.manifests.get((plan.namespace, plan.tool))

    @property
    def accepted(self) -> list[tuple[ToolPlan, Acceptance]]:
        """Every breaking change accepted on purpose, by tool."""
        return [(plan, a) for plan in self.answer.tools for a in plan.acceptances]

    @functools.cached_property
    def undecided(self) -> list[_Finding]:
        """The breaking changes lacking a decision, one per (tool, path, kind)."""
        found: dict[tuple[str, str, str, str], _Finding] = {}
        for plan in self.answer.tools:
            for decision in plan.decisions:
                for change in decision.report.breaking:
                    if _acceptance(plan, change) is not None:
                        continue
                    key = (plan.namespace, plan.tool, change.path, change.kind.value)
                    if key in found:
                        found[key].versions.append(decision.version)
                    else:
                        found[key] = _Finding(plan, change, [decision.version], decided=False)
        return list(found.values())

    @functools.cached_property
    def findings(self) -> list[_Finding]:
        """Every change of every tool's report (against its current version), plus the
        undecided breaking changes found only against older versions."""
        undecided = {
            (f.plan.namespace, f.plan.tool, f.change.path, f.change.kind.value): f
            for f in self.undecided
        }
        listed: list[_Finding] = []
        for plan in self.answer.tools:
            for change in plan.report.changes if plan.report else []:
                key = (plan.namespace, plan.tool, change.path, change.kind.value)
                known = undecided.pop(key, None)
                accepted = _acceptance(plan, change)
                listed.append(known or _Finding(plan, change, [], True, accepted))
        return listed + list(undecided.values())

    @property
    def needed(self) -> list[tuple[ToolPlan, Decision]]:
        return [(plan, d) for plan in self.answer.tools for d in plan.decisions]

    def verdict(self) -> str:
        """One line: the outcome, with the mode named (`check failed: ...`)."""
        tools = self.answer.tools
        forbidden = [n.name for n in self.answer.namespaces if not n.allowed]
        if forbidden:
            what = ", ".join(f"creating namespace {name} needs {name}:admin" for name in forbidden)
            if self.mode == "apply":
                return f"apply refused, nothing was applied: {what}"
            return f"{self.mode} refused: {what}; nothing would be applied"
        refused = [p for p in tools if not p.accepted]
        if refused:
            count = len(self.needed)
            names = ", ".join(f"{p.namespace}/{p.tool}" for p in refused)
            what = f"{count} decision{'s' if count != 1 else ''} missing for {names}"
            if self.mode == "apply":
                return f"apply refused, nothing was applied: {what}"
            if self.mode == "check":
                breaking = len(self.undecided)
                noun = "change lacks" if breaking == 1 else "changes lack"
                return f"check failed: {breaking} breaking {noun} a decision; {what}"
            return f"plan refused: {what}; nothing would be applied"
        counts = _counts(self.answer)
        if self.mode == "apply":
            if not self.answer.applied:
                return f"apply: nothing was applied: {counts}"
            if not _changes_anything(self.answer):
                return f"apply: no changes, the registry matches the manifests: {counts}"
            return f"applied: {counts}"
        if self.mode == "check":
            return f"check passed: no breaking change lacks a decision: {counts}"
        if not _changes_anything(self.answer):
            return f"plan: no changes, the registry matches the manifests: {counts}"
        return f"plan accepted: {counts}"


def _changes_anything(answer: PlanAnswer) -> bool:
    if any(p.action == "set" for p in answer.policies):
        return True
    return any(n.action == "create" for n in answer.namespaces) or any(
        p.action != "unchanged" or p.lifecycle or any(a.action != "unchanged" for a in p.aliases)
        for p in answer.tools
    )


def _new_namespaces(answer: PlanAnswer) -> list[str]:
    return [n.name for n in answer.namespaces if n.action == "create"]


def _counts(answer: PlanAnswer) -> str:
    tools = answer.tools
    created = sum(p.action == "create" for p in tools)
    published = sum(p.action == "new-version" for p in tools)
    unchanged = sum(p.action == "unchanged" for p in tools)
    lifecycle = sum(len(p.lifecycle) for p in tools)
    aliases = sum(a.action != "unchanged" for p in tools for a in p.aliases)
    parts = []
    namespaces = len(_new_namespaces(answer))
    if namespaces:
        parts.append(f"{namespaces} new namespace{'s' if namespaces != 1 else ''}")
    parts += [
        f"{created} to create",
        f"{published} new version{'s' if published != 1 else ''}",
        f"{unchanged} unchanged",
    ]
    if lifecycle:
        parts.append(f"{lifecycle} lifecycle change{'s' if lifecycle != 1 else ''}")
    if aliases:
        parts.append(f"{aliases} alias change{'s' if aliases != 1 else ''}")
    policies = sum(p.action == "set" for p in answer.policies)
    if policies:
        parts.append(f"{policies} namespace polic{'ies' if policies != 1 else 'y'} to set")
    accepted = sum(len(p.acceptances) for p in tools)
    if accepted:
        noun = "change" if accepted == 1 else "changes"
        parts.append(f"{accepted} breaking {noun} accepted on purpose")
    return ", ".join(parts)


# -- acceptances and policies, as every renderer words them -------------------------------


def _policy_text(policy: NamespacePolicy) -> str:
    if not policy.gating:
        return f"gating off ({policy.reason})"
    if not policy.relax:
        return "the strict rules (gating on, nothing relaxed)"
    return "; ".join(
        f"relax {r.kind} for {r.tool or 'every tool'} ({r.reason})" for r in policy.relax
    )


def _policy_steps(answer: PlanAnswer) -> list[tuple[PolicyPlan, str]]:
    """The policies to show (set, or refused), each with its line."""
    return [
        (
            step,
            f"namespace {step.namespace}: policy {step.action}"
            + ("" if step.allowed else f" (refused: needs {step.namespace}:admin)")
            + f": {_policy_text(step.policy)}",
        )
        for step in answer.policies
        if step.action == "set" or not step.allowed
    ]


def _acceptance_text(acceptance: Acceptance) -> str:
    breaks = ", ".join(f"v{n}" for n in acceptance.versions)
    by = "the namespace policy" if acceptance.source == "policy" else "this manifest"
    return (
        f"accepted on purpose: {acceptance.kind} at {acceptance.path or '/'} "
        f"(breaking for callers of {breaks}; accepted by {by}): {acceptance.reason}"
    )


def _severity(plan: ToolPlan) -> str:
    return plan.report.severity.value if plan.report is not None else "-"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _lifecycle_text(plan: ToolPlan) -> list[str]:
    lines = []
    for change in plan.lifecycle:
        if change.action == "retire":
            lines.append(f"retire v{change.version}")
        elif change.action == "deprecate":
            sunset = f" (sunset {change.sunset})" if change.sunset else ""
            lines.append(f"deprecate v{change.version}{sunset}")
        else:
            lines.append(f"converter v{change.version} -> v{change.to}: {_compact(change.ops)}")
    for alias in plan.aliases:
        if alias.action == "unchanged" and alias.routed:
            continue
        routed = "routed" if alias.routed else "no route yet: calls refused until one exists"
        contract = f"{alias.contract.tool} v{alias.contract.version}"
        lines.append(f"alias {alias.name}: {alias.action} (contract {contract}, {routed})")
    return lines


def _decision_options(plan: ToolPlan, decision: Decision) -> str:
    options = []
    if "retire" in decision.options:
        options.append(f"retire: [{decision.version}]")
    if "converter" in decision.options:
        ops = _compact(decision.suggested_ops) if decision.suggested_ops else "[...]"
        options.append(f"converters: [{{from: {decision.version}, ops: {ops}}}]")
    return " or ".join(options)


def _decision_subject(decision: Decision) -> str:
    if decision.alias:
        return f"alias {decision.alias} (contract v{decision.version})"
    return f"v{decision.version} ({decision.state})"


# -- text ---------------------------------------------------------------------------------------


def _render_text(report: _Report, out: TextIO) -> None:
    headers = ("TOOL", "ACTION", "VERSION", "SEVERITY", "DECISIONS", "SOURCE")
    rows = [
        (
            f"{p.namespace}/{p.tool}",
            p.action,
            f"v{p.version}",
            _severity(p),
            f"{len(p.decisions)} missing" if p.decisions else "-",
            p.source or "-",
        )
        for p in report.answer.tools
    ]
    for step in report.answer.namespaces:
        if step.action == "create":
            refused = "" if step.allowed else f" (refused: needs {step.name}:admin)"
            print(f"namespace {step.name}: create{refused}", file=out)
    for _, line in _policy_steps(report.answer):
        print(line, file=out)
    if _new_namespaces(report.answer) or _policy_steps(report.answer):
        print(file=out)
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    for row in [headers, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
    for plan in report.answer.tools:
        findings = [f for f in report.findings if f.plan is plan]
        details = _lifecycle_text(plan)
        if not findings and not details and not plan.decisions and not plan.acceptances:
            continue
        print(file=out)
        print(f"{plan.namespace}/{plan.tool} v{plan.version} ({plan.action})", file=out)
        kind_width = max((len(f.change.kind.value) for f in findings), default=0)
        for finding in findings:
            change = finding.change
            mark = "" if finding.decided else "  (no decision)"
            mark = "  (accepted)" if finding.accepted is not None else mark
            kind = change.kind.value.ljust(kind_width)
            print(f"  {change.severity.value:<9} {kind}  {change.path or '/'}{mark}", file=out)
            print(f"            {change.message}", file=out)
            if change.severity is Severity.BREAKING and change.witness is not None:
                print(f"            witness: {_compact(change.witness)}", file=out)
        for acceptance in plan.acceptances:
            print(f"  {_acceptance_text(acceptance)}", file=out)
        for line in details:
            print(f"  {line}", file=out)
        for decision in plan.decisions:
            print(f"  decision needed: {_decision_subject(decision)}: {decision.message}", file=out)
            print(f"            options: {_decision_options(plan, decision)}", file=out)
    print(file=out)
    print(report.verdict(), file=out)


# -- json ---------------------------------------------------------------------------------------


def _render_json(report: _Report, out: TextIO) -> None:
    out.write(msgspec.json.encode(report.answer).decode() + "\n")


# -- github -------------------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(name: str, props: dict[str, str], message: str) -> str:
    rendered = ",".join(f"{key}={_escape_property(value)}" for key, value in props.items())
    return f"::{name} {rendered}::{_escape_data(message)}\n"


def _display_path(path: str) -> str:
    """The path GitHub annotates: relative to the working directory (the checkout)."""
    if os.path.isabs(path):
        relative = os.path.relpath(path)
        if not relative.startswith(".."):
            return relative.replace(os.sep, "/")
    return path.replace(os.sep, "/")


def manifest_pointer(plan: ToolPlan, change: Change) -> str:
    """Where in the manifest a change is written: the definition is under `/tool`.
    A lifecycle decision of an unchanged definition (a retirement that strands an
    older version) is written at `/retire`."""
    if plan.action == "unchanged":
        return "/retire"
    return "/tool" + change.path


def _annotation(
    report: _Report, plan: ToolPlan, pointer: str, title: str, level: str, message: str
) -> str:
    manifest = report.manifest(plan)
    props: dict[str, str] = {}
    if manifest is not None:
        props["file"] = _display_path(manifest.path)
        position = manifest.position(pointer, key=True, nearest=True)
        if position is not None:
            props["line"], props["col"] = str(position[0]), str(position[1])
    props["title"] = title
    return _command(level, props, message)


def _render_github(report: _Report, out: TextIO) -> None:
    for step in report.answer.namespaces:
        if step.action == "create":
            level = "notice" if step.allowed else "error"
            needs = "" if step.allowed else f" (refused: needs {step.name}:admin)"
            out.write(f"::{level} title=namespace::namespace {step.name}: create{needs}\n")
    for policy_step, line in _policy_steps(report.answer):
        props: dict[str, str] = {}
        declared = report.policies.get(policy_step.namespace)
        position = declared.position("/policy", key=True) if declared is not None else None
        if declared is not None:
            props["file"] = _display_path(declared.path)
        if position is not None:
            props["line"], props["col"] = str(position[0]), str(position[1])
        props["title"] = "namespace policy"
        out.write(_command("notice" if policy_step.allowed else "error", props, line))
    for plan, acceptance in report.accepted:
        pointer = "/tool" + acceptance.path
        manifest = report.manifest(plan)
        if manifest is not None and acceptance.source == "request":
            keys = [(a.kind, a.path) for a in manifest.accept]
            if (acceptance.kind, acceptance.path) in keys:
                pointer = f"/accept/{keys.index((acceptance.kind, acceptance.path))}"
        title = f"{acceptance.kind} (accepted)"
        message = f"{plan.namespace}/{plan.tool}: {_acceptance_text(acceptance)}"
        out.write(_annotation(report, plan, pointer, title, "warning", message))
    for finding in report.findings:
        if finding.accepted is not None:
            continue  # annotated above, with its reason
        plan, change = finding.plan, finding.change
        name = f"{plan.namespace}/{plan.tool}"
        pointer = manifest_pointer(plan, change)
        if not finding.decided:
            versions = ", ".join(f"v{n}" for n in sorted(set(finding.versions)))
            message = (
                f"{name}: {change.message} (breaking for callers of {versions}, which would "
                f"have no route to v{plan.version}: retire them or add a converter)"
            )
            if change.witness is not None:
                message += f"; witness: {_compact(change.witness)}"
            if change.suggested_op is not None:
                message += f"; suggested op: {_compact(change.suggested_op)}"
            out.write(_annotation(report, plan, pointer, change.kind.value, "error", message))
        elif change.severity is Severity.BREAKING:
            message = f"{name}: {change.message} (breaking, settled by this manifest's decisions)"
            out.write(_annotation(report, plan, pointer, change.kind.value, "warning", message))
        else:
            message = f"{name}: {change.message} ({change.severity.value})"
            out.write(_annotation(report, plan, pointer, change.kind.value, "notice", message))
    covered = {(f.plan.namespace, f.plan.tool) for f in report.undecided}
    for plan, decision in report.needed:
        if (plan.namespace, plan.tool) in covered:
            continue
        # a decision with no breaking change to point at (e.g. an alias losing its route)
        message = f"{plan.namespace}/{plan.tool}: {decision.message}"
        pointer = "/retire" if plan.action == "unchanged" else "/tool/name"
        out.write(_annotation(report, plan, pointer, "decision needed", "error", message))
    print(report.verdict(), file=out)


def _append_step_summary(report: _Report) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as handle:
            _render_markdown(report, handle)
    except OSError:
        pass  # the summary is a courtesy; the annotations are already out


# -- markdown -----------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    text = " ".join(text.split())
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def _render_markdown(report: _Report, out: TextIO) -> None:
    ok = report.answer.accepted and (report.mode != "apply" or report.answer.applied)
    icon = "✅" if ok else "❌"
    print(_MARKDOWN_MARKER, file=out)
    print(f"## {icon} {_cell(report.verdict())}", file=out)
    if report.offline:
        print(file=out)
        print("_Checked offline against a saved toolset._", file=out)
    for step in report.answer.namespaces:
        if step.action == "create":
            refused = "" if step.allowed else f" (refused: needs {_code(step.name + ':admin')})"
            print(file=out)
            print(f"- namespace {_code(step.name)}: create{refused}", file=out)
    for _, line in _policy_steps(report.answer):
        print(file=out)
        print(f"- {_cell(line)}", file=out)
    print(file=out)
    print("| Tool | Action | Version | Severity | Decisions missing | Manifest |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    for plan in report.answer.tools:
        print(
            f"| {_code(f'{plan.namespace}/{plan.tool}')} | {plan.action} | v{plan.version} "
            f"| {_severity(plan)} | {len(plan.decisions) or '-'} "
            f"| {_code(plan.source) if plan.source else '-'} |",
            file=out,
        )
    if report.findings:
        print(file=out)
        print("### Changes", file=out)
        print(file=out)
        print("| Tool | Kind | Severity | Path | Message | Witness |", file=out)
        print("|---|---|---|---|---|---|", file=out)
        for finding in report.findings:
            plan, change = finding.plan, finding.change
            severity = change.severity.value
            if change.severity is Severity.BREAKING:
                severity = f"**{severity}**" + ("" if finding.decided else " (no decision)")
                severity += " (accepted)" if finding.accepted is not None else ""
            witness = _code(_compact(change.witness)) if change.witness is not None else "-"
            print(
                f"| {_code(f'{plan.namespace}/{plan.tool}')} | {_code(change.kind.value)} "
                f"| {severity} | {_code(change.path or '/')} | {_cell(change.message)} "
                f"| {witness} |",
                file=out,
            )
    if report.needed:
        print(file=out)
        print("### Decisions still needed", file=out)
        print(file=out)
        for plan, decision in report.needed:
            kinds = ", ".join(_code(k) for k in decision.kinds) or "-"
            print(
                f"- {_code(f'{plan.namespace}/{plan.tool}')} {_decision_subject(decision)}: "
                f"{_cell(decision.message)}. Breaking kinds: {kinds}.",
                file=out,
            )
            print(f"  Add to the manifest: {_code(_decision_options(plan, decision))}", file=out)
    if report.accepted:
        print(file=out)
        print("### Accepted on purpose", file=out)
        print(file=out)
        print("| Tool | Kind | Path | Breaking for | Accepted by | Reason |", file=out)
        print("|---|---|---|---|---|---|", file=out)
        for plan, a in report.accepted:
            print(
                f"| {_code(f'{plan.namespace}/{plan.tool}')} | {_code(a.kind)} "
                f"| {_code(a.path or '/')} | {', '.join(f'v{n}' for n in a.versions)} "
                f"| {'namespace policy' if a.source == 'policy' else 'manifest'} "
                f"| {_cell(a.reason)} |",
                file=out,
            )
    details = [(plan, line) for plan in report.answer.tools for line in _lifecycle_text(plan)]
    if details:
        print(file=out)
        print("### Lifecycle and aliases", file=out)
        print(file=out)
        for plan, line in details:
            print(f"- {_code(f'{plan.namespace}/{plan.tool}')}: {_cell(line)}", file=out)
    print(file=out)


def _render(report: _Report, output_format: str, out: TextIO) -> None:
    renderers = {
        "text": _render_text,
        "json": _render_json,
        "github": _render_github,
        "markdown": _render_markdown,
    }
    renderers[output_format](report, out)
    out.flush()


# -- the verbs, for registry.cli ------------------------------------------------------------------


@functools.cache
def _pipeline_verbs() -> list[Verb]:
    from registry.cli import Verb

    return [
        Verb(
            "plan",
            "show what applying the manifests of DIR would do (POST /v1/apply?plan=true); "
            "exit 1 when something would be refused",
            _common_arguments,
            run_plan,
        ),
        Verb(
            "apply",
            "apply the manifests of DIR in one transaction: all of it lands or none of it "
            "does; re-running is a no-op",
            _common_arguments,
            run_apply,
        ),
        Verb(
            "check",
            "exit 1 when a manifest of DIR carries a breaking change without its decision "
            "(online, or offline with --against-file)",
            _check_arguments,
            run_check,
        ),
    ]


# Declared here for readers and type checkers; built on first access (see the module docstring).
PIPELINE_VERBS: list[Verb]


def __getattr__(name: str) -> list[Verb]:
    if name == "PIPELINE_VERBS":
        return _pipeline_verbs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
