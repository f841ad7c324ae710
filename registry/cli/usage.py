"""`usage`: who still calls which version of a tool, as gated servers report it
(client verb; `retire --require-idle` in lifecycle.py reads the same evidence)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from registry.cli.common import EXIT_OK, InputError, Verb
from registry.cli.remote import (
    add_format,
    add_tool,
    duration,
    print_json,
    print_table,
    problem_text,
    registry_call,
    second,
    tool_path,
)

__all__ = ["VERBS", "run_usage"]


def _usage_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "read")
    parser.add_argument("--version", metavar="N", help="one version only (3 or v3)")
    parser.add_argument(
        "--window",
        metavar="DURATION",
        type=duration,
        help="count this far back (7d, 12h, ...; default: everything the registry keeps)",
    )
    add_format(parser)


def run_usage(args: argparse.Namespace) -> int:
    path = (
        tool_path(args, args.version, "--version")
        + "/usage"
        + (f"?window={args.window}" if args.window else "")
    )
    status, answer = registry_call(args, "GET", path)
    if status != 200:
        raise InputError(f"{path}: {problem_text(status, answer)}")
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    versions = answer["versions"] if args.version is None else [answer]
    _print_usage(f"{args.namespace}/{args.tool}", answer, versions, sys.stdout)
    return EXIT_OK


def _print_usage(name: str, answer: Any, versions: list[Any], out: TextIO) -> None:
    print(f"{name}: calls reported by gated servers since {second(answer['since'])}", file=out)
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
                second(entry["last_seen"]),
                servers or "-",
            )
        )
        split = ", ".join(
            f"{d['decision']}{' ' + d['reason'] if d.get('reason') else ''} {d['calls']:,}"
            for d in entry["decisions"]
        )
        if split:
            details.append(f"  {label}: {split}")
    print_table(rows, out)
    for line in details:
        print(line, file=out)


VERBS: list[Verb] = [
    Verb(
        "usage",
        "who still calls which version of a tool: calls, last seen and servers per version",
        _usage_arguments,
        run_usage,
    ),
]
