"""`retire` and `usage`: retirement with evidence of who still calls a version (client verbs)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from registry.cli.common import (
    EXIT_BREAKING,
    EXIT_OK,
    PROG,
    InputError,
    Verb,
    registry_request,
    registry_token,
    required_registry_url,
)

__all__ = ["VERBS", "run_retire", "run_usage"]


def _duration(text: str) -> str:
    from registry.policy.usage import parse_duration

    try:
        parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _tool_arguments(parser: argparse.ArgumentParser, scope: str) -> None:
    """NAMESPACE TOOL, and where the registry is."""
    parser.add_argument("namespace", metavar="NAMESPACE")
    parser.add_argument("tool", metavar="TOOL")
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument(
        "--token", help=f"a bearer token with NAMESPACE:{scope} (env REGISTRY_TOKEN)"
    )


def _registry_call(
    args: argparse.Namespace, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    """(status, decoded JSON) of a request to the registry; InputError when it cannot be
    reached or answers something that is not JSON."""
    url = required_registry_url(args)
    target = f"{url.rstrip('/')}{path}"
    response = registry_request(method, target, registry_token(args), body)
    try:
        return response.status_code, response.json()
    except ValueError:
        raise InputError(
            f"{target}: HTTP {response.status_code}: the answer is not JSON: "
            f"{' '.join(response.text[:200].split())}"
        ) from None


def _tool_path(args: argparse.Namespace, version: str | None, what: str) -> str:
    """`/v1/namespaces/{ns}/tools/{tool}` (and `/versions/{n}` when `version` is given)."""
    from urllib.parse import quote

    path = f"/v1/namespaces/{quote(args.namespace, safe='')}/tools/{quote(args.tool, safe='')}"
    if version is None:
        return path
    number = version.removeprefix("v")
    if not number.isdigit() or int(number) < 1:
        raise InputError(f"{what} {version!r} is not a version number (3 or v3)")
    return f"{path}/versions/{int(number)}"


def _problem_text(status: int, answer: Any) -> str:
    detail = answer.get("detail") if isinstance(answer, dict) else None
    return f"HTTP {status}: {' '.join(str(detail or answer).split())}"


def _retire_arguments(parser: argparse.ArgumentParser) -> None:
    _tool_arguments(parser, "publish")
    parser.add_argument("version", metavar="VERSION", help="the version to retire (3 or v3)")
    parser.add_argument(
        "--require-idle",
        metavar="DURATION",
        type=_duration,
        help="refuse while the version has been called within DURATION (7d, 12h, ...), "
        "as gated servers report their calls",
    )


def run_retire(args: argparse.Namespace) -> int:
    """Exit 0 retired (warnings on stderr), 1 refused (still called, or a route lost)."""
    path = _tool_path(args, args.version, "VERSION") + "/retire"
    body = {"require_idle": args.require_idle} if args.require_idle else None
    status, answer = _registry_call(args, "POST", path, body)
    if status == 409:
        print(f"{PROG}: retirement refused: {_problem_text(status, answer)}", file=sys.stderr)
        return EXIT_BREAKING
    if status != 200:
        raise InputError(f"{path}: {_problem_text(status, answer)}")
    for warning in answer.get("warnings", []):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    print(f"{args.namespace}/{args.tool} v{answer['version']}: {answer['state']}")
    return EXIT_OK


def _usage_arguments(parser: argparse.ArgumentParser) -> None:
    _tool_arguments(parser, "read")
    parser.add_argument("--version", metavar="N", help="one version only (3 or v3)")
    parser.add_argument(
        "--window",
        metavar="DURATION",
        type=_duration,
        help="count this far back (7d, 12h, ...; default: everything the registry keeps)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run_usage(args: argparse.Namespace) -> int:
    path = (
        _tool_path(args, args.version, "--version")
        + "/usage"
        + (f"?window={args.window}" if args.window else "")
    )
    status, answer = _registry_call(args, "GET", path)
    if status != 200:
        raise InputError(f"{path}: {_problem_text(status, answer)}")
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
        return EXIT_OK
    versions = answer["versions"] if args.version is None else [answer]
    _print_usage(f"{args.namespace}/{args.tool}", answer, versions, sys.stdout)
    return EXIT_OK


def _second(stamp: str | None) -> str:
    """An RFC 3339 time from the API, to the second, in UTC (`2026-06-01T12:00:00Z`)."""
    from datetime import UTC, datetime

    if not stamp:
        return "-"
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _print_usage(name: str, answer: Any, versions: list[Any], out: TextIO) -> None:
    print(f"{name}: calls reported by gated servers since {_second(answer['since'])}", file=out)
    if not any(v["calls"] for v in versions):
        print("no calls in this window", file=out)
        return
    rows = [("VERSION", "STATE", "CALLS", "LAST SEEN", "SERVERS")]
    details = []
    for entry in versions:
        label = f"v{entry['version']}" if entry["version"] is not None else "none"
        servers = ", ".join(f"{s['name']} ({s['calls']:,})" for s in entry["servers"])
        rows.append(
            (
                label,
                entry.get("state") or "-",
                f"{entry['calls']:,}",
                _second(entry["last_seen"]),
                servers or "-",
            )
        )
        split = ", ".join(
            f"{d['decision']}{' ' + d['reason'] if d.get('reason') else ''} {d['calls']:,}"
            for d in entry["decisions"]
        )
        if split:
            details.append(f"  {label}: {split}")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip(), file=out)
    for line in details:
        print(line, file=out)


VERBS: list[Verb] = [
    Verb(
        "retire",
        "retire a version (final); --require-idle refuses while gated servers still see calls",
        _retire_arguments,
        run_retire,
    ),
    Verb(
        "usage",
        "who still calls which version of a tool: calls, last seen and servers per version",
        _usage_arguments,
        run_usage,
    ),
]
