"""What the verbs that read or change one tool on a registry share: NAMESPACE TOOL
and where the registry is, one JSON call, version numbers, problems as one line,
times to the second and plain tables.

    status, answer = registry_call(args, "GET", tool_path(args, "v3", "VERSION"))
    if status != 200:
        raise InputError(f"...: {problem_text(status, answer)}")
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO
from urllib.parse import quote

from registry.cli.common import (
    InputError,
    registry_request,
    registry_token,
    required_registry_url,
)

__all__ = [
    "add_format",
    "add_registry",
    "add_tool",
    "duration",
    "namespace_path",
    "print_json",
    "print_table",
    "problem_text",
    "registry_call",
    "second",
    "tool_path",
    "version_number",
]


def add_registry(parser: argparse.ArgumentParser, scope: str) -> None:
    """`--url` and `--token`; `scope` names what the token needs (`NAMESPACE:publish`)."""
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument("--token", help=f"a bearer token with {scope} (env REGISTRY_TOKEN)")


def add_tool(parser: argparse.ArgumentParser, scope: str) -> None:
    """NAMESPACE TOOL, and where the registry is."""
    parser.add_argument("namespace", metavar="NAMESPACE")
    parser.add_argument("tool", metavar="TOOL")
    add_registry(parser, f"NAMESPACE:{scope}")


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="json: the registry's answer as it is",
    )


def duration(text: str) -> str:
    """An argparse type: a duration such as `7d` or `12h`, kept as written."""
    from registry.policy.callers import parse_duration

    try:
        parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def registry_call(
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


def version_number(text: str, what: str) -> int:
    """`3` or `v3` -> 3; InputError naming `what` otherwise."""
    number = text.removeprefix("v")
    if not number.isdigit() or int(number) < 1:
        raise InputError(f"{what} {text!r} is not a version number (3 or v3)")
    return int(number)


def namespace_path(namespace: str) -> str:
    return f"/v1/namespaces/{quote(namespace, safe='')}"


def tool_path(args: argparse.Namespace, version: str | None, what: str) -> str:
    """`/v1/namespaces/{ns}/tools/{tool}` (and `/versions/{n}` when `version` is given)."""
    path = f"{namespace_path(args.namespace)}/tools/{quote(args.tool, safe='')}"
    if version is None:
        return path
    return f"{path}/versions/{version_number(version, what)}"


def problem_text(status: int, answer: Any) -> str:
    detail = answer.get("detail") if isinstance(answer, dict) else None
    return f"HTTP {status}: {' '.join(str(detail or answer).split())}"


def second(stamp: str | None) -> str:
    """An RFC 3339 time from the API, to the second, in UTC (`2026-06-01T12:00:00Z`)."""
    from datetime import UTC, datetime

    if not stamp:
        return "-"
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def print_json(answer: Any, out: TextIO | None = None) -> None:
    """`answer` as indented JSON on `out` (None: sys.stdout as it is when called)."""
    (out or sys.stdout).write(json.dumps(answer, indent=2, ensure_ascii=False) + "\n")


def print_table(rows: Sequence[Sequence[str]], out: TextIO | None = None, indent: str = "") -> None:
    """Columns padded to their widest cell, two spaces apart; the first row is the header
    (on `out`; None: sys.stdout as it is when called)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        print(indent + line, file=out)
