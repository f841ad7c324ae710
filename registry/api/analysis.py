"""What the analysis workers run (`registry.api.budget`): every call into the engine.

Each function runs in a worker process, on arguments pickled there, with the
process's own `RouteFinder` (its classification cache lives as long as the
worker). A refusal is raised as the `ApiError` the handler answers; a schema
the engine cannot follow (Python's recursion limit) is `analysis-over-budget`,
never a 500.

    await budget.run(request, analysis.validated_body, tool, raw, caps)   # -> digest
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from itertools import pairwise
from typing import Any, Final, ParamSpec, TypeVar

import msgspec

from registry.api.caps import Caps
from registry.api.json_body import check_document
from registry.api.problems import ApiError
from registry.canonical import DigestError
from registry.canonical import digest as canonical_digest
from registry.compat import ChangeReport, ClassificationError, classify
from registry.definitions import DefinitionError, validate_definition
from registry.documents import DocumentError, parse_document
from registry.manifests import collect_sources
from registry.policy.acceptance import NamespacePolicy
from registry.policy.plan import ManifestBody, ToolPlan, plan_tool
from registry.policy.publishing import (
    Decision,
    PolicyError,
    PublishOutcome,
    PublishRequest,
    check_deprecate,
    check_retire,
    plan_publish,
    verify_converter,
)
from registry.policy.review import Assessment, risks_of
from registry.policy.review import assess as assess_publish
from registry.policy.routes import RouteFinder, RouteStep
from registry.policy.verify import ToolVerdict, VerifyError, verify_listing
from registry.store import Alias, Converter, ToolState, Version

__all__ = [
    "assess",
    "checked_body",
    "classify_definitions",
    "console_listing",
    "console_manifests",
    "converter_report",
    "deprecate_decisions",
    "diff",
    "diff_rows",
    "lower_priority",
    "plan",
    "plan_manifest",
    "ready",
    "report",
    "retire_decisions",
    "routed",
    "timeline_analysis",
    "validated",
    "validated_body",
    "validated_bundle",
    "verified",
]

WORKER_NICENESS: Final = 10  # the event loop wins the CPU from a busy worker
_P = ParamSpec("_P")
_T = TypeVar("_T")
_FINDER = RouteFinder()


def lower_priority() -> None:
    """Each worker's initializer: below the event loop's process on the CPU."""
    with contextlib.suppress(OSError):  # not allowed: same priority, still off the loop
        os.nice(WORKER_NICENESS)


def ready() -> None:
    """A no-op: run once per worker by `Budget.start`, so that they start at once."""


def _bounded(fn: Callable[_P, _T]) -> Callable[_P, _T]:
    """The engine's recursion limit met: a problem that says so, not a crash."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return fn(*args, **kwargs)
        except RecursionError:
            raise ApiError(
                "analysis-over-budget",
                "the definitions nest or refer to themselves too deeply to be analysed",
            ) from None

    return run


def _definition_problem(message: str, pointer: str) -> ApiError:
    return ApiError("invalid-definition", message, pointer=pointer)


def checked_body(raw: bytes) -> None:
    """`check_document` of a request body too large to check on the event loop."""
    check_document(raw)


@_bounded
def validated(
    tool: str | None, definition: dict[str, Any], caps: Caps, prefix: str = "/definition"
) -> str:
    """The digest of a valid definition named `tool` (None: any name) within the caps;
    else 422 (the caps first: past one, nothing else is done)."""
    caps.check(definition, prefix)
    try:
        validate_definition(definition)
    except DefinitionError as exc:
        raise _definition_problem(exc.message, prefix + exc.pointer) from exc
    if tool is not None and definition.get("name") != tool:
        raise _definition_problem(
            f"the definition's name {definition.get('name')!r} is not the tool {tool!r} "
            "of the path",
            prefix + "/name",
        )
    try:
        return canonical_digest(definition)
    except DigestError as exc:
        raise _definition_problem(str(exc), prefix) from exc


class _DefinitionBody(msgspec.Struct):
    definition: dict[str, Any]


class _Manifest(msgspec.Struct):
    tool: dict[str, Any]


class _Bundle(msgspec.Struct):
    manifests: list[_Manifest]


def validated_body(tool: str, raw: bytes, caps: Caps) -> str:
    """`validated` of the definition of a publish or check body, decoded here from the
    body's bytes: bytes cross to a worker in one copy, where the decoded definition
    (past the caps, as large as the body's limit) would be pickled object by object
    beside the event loop."""
    return validated(tool, msgspec.json.decode(raw, type=_DefinitionBody).definition, caps)


def validated_bundle(raw: bytes, caps: Caps) -> tuple[list[str], ApiError | None]:
    """The digests of a `POST /v1/apply` body's manifests, in order, decoded here from
    its bytes (as `validated_body`), up to the first that is refused, and that refusal
    (its pointer names the manifest)."""
    digests: list[str] = []
    for index, manifest in enumerate(msgspec.json.decode(raw, type=_Bundle).manifests):
        try:
            digests.append(validated(None, manifest.tool, caps, f"/manifests/{index}/tool"))
        except ApiError as exc:
            return digests, exc
    return digests, None


def _policy_problem(exc: PolicyError, prefix: str = "") -> ApiError:
    return ApiError(
        exc.code,
        exc.message,
        pointer=(prefix + exc.pointer) if exc.pointer else None,
        report=exc.report,
    )


@_bounded
def plan(
    state: ToolState,
    definition: dict[str, Any],
    digest: str,
    data: PublishRequest,
    policy: NamespacePolicy,
) -> PublishOutcome:
    """The publishing rule's outcome for a new definition of the tool."""
    try:
        return plan_publish(state, definition, digest, data, _FINDER, policy)
    except PolicyError as exc:
        raise _policy_problem(exc) from exc
    except ClassificationError as exc:
        raise _definition_problem(exc.message, "/definition" + exc.pointer) from exc


@_bounded
def assess(
    state: ToolState,
    definition: dict[str, Any],
    digest: str,
    data: PublishRequest,
    policy: NamespacePolicy,
    other_tools: Sequence[str] | None = None,
) -> Assessment:
    """`plan`, the risk findings against current, and whether the version waits for
    review (registry.policy.review), in one call: the scan reads what plan read.
    `other_tools`: the names a finding looks for (None: the namespace's other tools)."""
    others = state.other_tools if other_tools is None else other_tools
    try:
        return assess_publish(state, definition, digest, data, _FINDER, policy, others)
    except PolicyError as exc:
        raise _policy_problem(exc) from exc
    except ClassificationError as exc:
        raise _definition_problem(exc.message, "/definition" + exc.pointer) from exc


@_bounded
def plan_manifest(
    index: int,
    state: ToolState,
    body: ManifestBody,
    digest: str,
    aliases: Sequence[Alias],
    policy: NamespacePolicy,
    other_tools: Sequence[str] = (),
) -> ToolPlan:
    """`plan_tool` of one manifest of a bundle (its problems point into the bundle);
    `other_tools`: the namespace's other tools, the bundle's included."""
    try:
        return plan_tool(state, body, digest, _FINDER, aliases, policy, other_tools)
    except PolicyError as exc:
        raise ApiError(
            exc.code,
            f"{body.source or body.tool['name']}: {exc.message}",
            pointer=f"/manifests/{index}{exc.pointer}",
            report=exc.report,
        ) from exc
    except ClassificationError as exc:
        raise _definition_problem(exc.message, f"/manifests/{index}/tool{exc.pointer}") from exc


@_bounded
def report(old: Version, new: Version) -> ChangeReport:
    """The change report from `old` to `new` (two stored versions)."""
    try:
        return _FINDER.report(old, new)
    except ClassificationError as exc:
        raise ApiError("analysis-over-budget", f"the engine refused: {exc.message}") from exc


@_bounded
def diff(old: Version, new: Version, other_tools: Sequence[str]) -> tuple[ChangeReport, list[Any]]:
    """The change report from `old` to `new` and what `new` adds that a model may obey or
    a person may not see (the risk findings), in one call."""
    return report(old, new), risks_of(old.definition, new.definition, other_tools)


@_bounded
def classify_definitions(old: Mapping[str, Any], new: Mapping[str, Any]) -> ChangeReport:
    """`classify` as the toolset builder's finder asks it (its errors pass through)."""
    return classify(old, new)


@_bounded
def converter_report(
    source: Version, target: Version, ops: list[dict[str, Any]], caps: Caps
) -> ChangeReport | None:
    """The report a converter's operations leave (the caps of a definition hold them)."""
    caps.check(ops, "/ops", integers="invalid-body")
    try:
        return verify_converter(source, target, ops, _FINDER)
    except PolicyError as exc:
        raise _policy_problem(exc) from exc


@_bounded
def verified(
    tools: Sequence[Any], revision: str, versions_by_tool: Mapping[str, Sequence[Version]]
) -> list[ToolVerdict]:
    """A listing's verdicts (`verify_listing`: a digest of each listed tool and of each
    stored version of it, linear in a listing of up to the whole body's size)."""
    try:
        return verify_listing(tools, revision, versions_by_tool)
    except VerifyError as exc:
        code = "invalid-protocol-version" if "protocolVersion" in str(exc) else "invalid-body"
        raise ApiError(code, str(exc)) from exc


@_bounded
def routed(
    versions: Sequence[Version], converters: Sequence[Converter], start: int, target: int
) -> bool:
    return _FINDER.route(versions, converters, start=start, target=target) is not None


@_bounded
def retire_decisions(state: ToolState, number: int) -> list[Decision]:
    return check_retire(state, number, _FINDER)


@_bounded
def deprecate_decisions(state: ToolState, number: int, sunset: datetime | None) -> list[Decision]:
    return check_deprecate(state, number, sunset, _FINDER)


@_bounded
def timeline_analysis(
    versions: Sequence[Version], converters: Sequence[Converter]
) -> tuple[dict[int, ChangeReport], dict[int, list[RouteStep]]]:
    """The console's timeline: each version's report from the one before (held versions
    included), and each served version's route to current (as the toolset payload routes
    them: through released versions only)."""
    reports: dict[int, ChangeReport] = {}
    for old, new in pairwise(versions):
        try:
            reports[new.version] = _FINDER.report(old, new)
        except ClassificationError:
            continue  # shown without a report; the diff page says why
    released = [v for v in versions if v.state not in ("pending", "rejected")]
    served = [v for v in released if v.served]
    routes = {}
    for version in served:
        route = _FINDER.route(
            released, converters, start=version.version, target=served[-1].version
        )
        if route is not None:
            routes[version.version] = route
    return reports, routes


def console_listing(text: str) -> tuple[list[Any], str | None]:
    """The tools of a listing pasted into the console (JSON or YAML), or why there are
    none: the parse is as costly as the text is long."""
    from registry.console.views import ListingError, listed_tools

    try:
        return listed_tools(parse_document(text, "the pasted listing")), None
    except (ListingError, DocumentError) as exc:
        return [], str(exc)


def console_manifests(
    sources: Sequence[tuple[str, bytes]],
) -> tuple[list[ManifestBody], list[str]]:
    """The manifests uploaded or pasted into the console's plan, as `POST /v1/apply`
    takes them, and the errors of those that are not (YAML parses are costly)."""
    manifests, errors = collect_sources(sources)
    return [m.to_body() for m in manifests], [str(e) for e in errors]


def diff_rows(old: Any, new: Any) -> list[Any]:
    """The console diff page's two columns (difflib, quadratic in the worst case)."""
    from registry.console.views import side_by_side

    return side_by_side(old, new)
