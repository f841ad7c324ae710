"""Everyday reads and lifecycle on a registry (client verbs, base install):

    registry history billing db.query              # every version, newest last
    registry show billing db.query [3]             # one version (default: current)
    registry diff billing db.query 2 3             # the registry's report from v2 to v3
    registry deprecate billing db.query 2 --sunset 2027-06-01T00:00:00Z
    registry retire billing db.query 2 [--require-idle 7d]
    registry alias billing db_query_v1 db.query --version 1
    registry converter billing db.query --from 1 --to 2 --ops ops.json

Each takes `--format text|json` (json: the registry's answer as it is). Exit codes
as everywhere: 0 done, 1 refused (a route would be lost, a version still called,
a converter that does not verify, a breaking diff), 2 bad input or another answer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from registry.cli.common import EXIT_BREAKING, EXIT_OK, PROG, InputError, Verb
from registry.cli.remote import (
    add_format,
    add_registry,
    add_tool,
    duration,
    namespace_path,
    print_json,
    print_table,
    problem_text,
    registry_call,
    second,
    tool_path,
    version_number,
)

__all__ = ["VERBS", "diff_arguments_help", "run_remote_diff"]

# the refusals a lifecycle call can meet: exit 1, the problem's detail on stderr
_REFUSED = frozenset({"route-lost", "version-in-use", "converter-unverified"})


def _problem_type(answer: Any) -> str:
    kind = answer.get("type", "") if isinstance(answer, dict) else ""
    return str(kind).rsplit("/", 1)[-1]


def _expect(path: str, status: int, answer: Any, ok: tuple[int, ...], refused: str) -> bool:
    """True when `status` is one of `ok`; False (after one stderr line) when the registry
    refused on its rules; InputError for anything else."""
    if status in ok:
        return True
    if _problem_type(answer) in _REFUSED:
        print(f"{PROG}: {refused}: {problem_text(status, answer)}", file=sys.stderr)
        return False
    raise InputError(f"{path}: {problem_text(status, answer)}")


def _short(digest: str) -> str:
    return str(digest)[: len("sha256:") + 12]


def _current(versions: list[dict[str, Any]]) -> int | None:
    served = [v["version"] for v in versions if v["state"] in ("active", "deprecated")]
    return max(served) if served else None


def _state(version: dict[str, Any], current: int | None) -> str:
    return str(version["state"]) + (" (current)" if version["version"] == current else "")


def _accepted(version: dict[str, Any]) -> str:
    return ", ".join(f"{a['kind']} {a['path']}" for a in version.get("acceptances", [])) or "-"


# -- history ---------------------------------------------------------------------------


def _history_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "read")
    add_format(parser)


def run_history(args: argparse.Namespace) -> int:
    path = tool_path(args, None, "") + "/versions"
    status, answer = registry_call(args, "GET", path)
    _expect(path, status, answer, (200,), "")
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    versions = answer["versions"]
    current = _current(versions)
    count = len(versions)
    print(f"{args.namespace}/{args.tool}: {count} version{'s' if count != 1 else ''}")
    rows = [("VERSION", "STATE", "DIGEST", "CREATED", "SUNSET", "ACCEPTED")]
    rows += [
        (
            f"v{v['version']}",
            _state(v, current),
            _short(v["digest"]),
            second(v["created_at"]),
            second(v.get("sunset")),
            _accepted(v),
        )
        for v in versions
    ]
    print_table(rows)
    return EXIT_OK


# -- show ------------------------------------------------------------------------------


def _show_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "read")
    parser.add_argument(
        "version", metavar="VERSION", nargs="?", help="3 or v3 (default: the current version)"
    )
    add_format(parser)


def run_show(args: argparse.Namespace) -> int:
    history_path = tool_path(args, None, "") + "/versions"
    if args.version is None:
        status, answer = registry_call(args, "GET", history_path)
        _expect(history_path, status, answer, (200,), "")
        current = _current(answer["versions"])
        if current is None:
            raise InputError(
                f"{args.namespace}/{args.tool} has no current version: every version is "
                "retired (name one: registry show NAMESPACE TOOL VERSION)"
            )
        chosen = next(v for v in answer["versions"] if v["version"] == current)
    else:
        path = tool_path(args, args.version, "VERSION")
        status, chosen = registry_call(args, "GET", path)
        _expect(path, status, chosen, (200,), "")
        current = None
    if args.format == "json":
        print_json(chosen)
        return EXIT_OK
    label = chosen["state"] + (", current" if chosen["version"] == current else "")
    print(f"{args.namespace}/{args.tool} v{chosen['version']} ({label})")
    print(f"digest:   {chosen['digest']}")
    print(f"created:  {second(chosen['created_at'])}")
    if chosen.get("sunset"):
        print(f"sunset:   {second(chosen['sunset'])}")
    for acceptance in chosen.get("acceptances", []):
        print(f"accepted: {acceptance['kind']} {acceptance['path']}: {acceptance['reason']}")
    print_json(chosen["definition"])
    return EXIT_OK


# -- diff (remote) ---------------------------------------------------------------------

diff_arguments_help = "NAMESPACE TOOL OLD NEW: the registry's report from version OLD to NEW"


def run_remote_diff(args: argparse.Namespace, operands: list[str]) -> int:
    """`registry diff NAMESPACE TOOL OLD NEW`: exit 1 when the change is breaking."""
    import msgspec

    from registry.cli.report_text import print_report, use_color
    from registry.compat import ChangeReport, Severity

    args.namespace, args.tool, old_text, new_text = operands
    old = version_number(old_text, "OLD")
    path = tool_path(args, new_text, "NEW") + f"/diff?against={old}"
    status, answer = registry_call(args, "GET", path)
    _expect(path, status, answer, (200,), "")
    report = msgspec.convert(answer["report"], ChangeReport)
    if args.format == "json":
        print_json(answer)
    else:
        print(f"{args.namespace}/{args.tool} v{answer['against']} -> v{answer['version']}")
        print_report(report, sys.stdout, use_color(args.color, sys.stdout))
        for acceptance in answer.get("acceptances", []):
            print(
                f"accepted on purpose: {acceptance['kind']} {acceptance['path']}: "
                f"{acceptance['reason']}"
            )
    return EXIT_BREAKING if report.severity is Severity.BREAKING else EXIT_OK


# -- deprecate and retire --------------------------------------------------------------


def _sunset(text: str) -> str:
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an RFC 3339 time (2027-06-01T00:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no time zone (end it with Z or +01:00)")
    return text


def _deprecate_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "publish")
    parser.add_argument("version", metavar="VERSION", help="the version to deprecate (3 or v3)")
    parser.add_argument(
        "--sunset", metavar="TIME", type=_sunset, help="RFC 3339: when it is to be retired"
    )
    add_format(parser)


def _transition(args: argparse.Namespace, action: str, body: Any, refused: str) -> Any:
    """POST `.../versions/{VERSION}/{action}`: the answer, or None after a refusal line."""
    path = tool_path(args, args.version, "VERSION") + f"/{action}"
    status, answer = registry_call(args, "POST", path, body)
    return answer if _expect(path, status, answer, (200,), refused) else None


def run_deprecate(args: argparse.Namespace) -> int:
    body = {"sunset": args.sunset} if args.sunset else None
    answer = _transition(args, "deprecate", body, "deprecation refused")
    if answer is None:
        return EXIT_BREAKING
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    sunset = f", sunset {second(answer['sunset'])}" if answer.get("sunset") else ""
    print(f"{args.namespace}/{args.tool} v{answer['version']}: {answer['state']}{sunset}")
    return EXIT_OK


def _retire_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "publish")
    parser.add_argument("version", metavar="VERSION", help="the version to retire (3 or v3)")
    parser.add_argument(
        "--require-idle",
        metavar="DURATION",
        type=duration,
        help="refuse while the version has been called within DURATION (7d, 12h, ...), "
        "as gated servers report their calls",
    )
    add_format(parser)


def run_retire(args: argparse.Namespace) -> int:
    """Exit 0 retired (warnings on stderr), 1 refused (still called, or a route lost)."""
    body = {"require_idle": args.require_idle} if args.require_idle else None
    answer = _transition(args, "retire", body, "retirement refused")
    if answer is None:
        return EXIT_BREAKING
    for warning in answer.get("warnings", []):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        print_json(answer)
    else:
        print(f"{args.namespace}/{args.tool} v{answer['version']}: {answer['state']}")
    return EXIT_OK


# -- aliases and converters ------------------------------------------------------------


def _alias_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("namespace", metavar="NAMESPACE")
    parser.add_argument("alias", metavar="ALIAS", help="the old tool name callers still use")
    parser.add_argument("target", metavar="TARGET", help="the tool its calls go to")
    parser.add_argument(
        "--version",
        metavar="N",
        required=True,
        help="the contract the alias speaks: a version (3 or v3) of --contract-tool",
    )
    parser.add_argument(
        "--contract-tool",
        metavar="TOOL",
        help="the tool whose version the alias speaks (default: TARGET)",
    )
    add_registry(parser, "NAMESPACE:publish")
    add_format(parser)


def run_alias(args: argparse.Namespace) -> int:
    from urllib.parse import quote

    contract = {
        "tool": args.contract_tool or args.target,
        "version": version_number(args.version, "--version"),
    }
    path = f"{namespace_path(args.namespace)}/aliases/{quote(args.alias, safe='')}"
    status, answer = registry_call(args, "PUT", path, {"target": args.target, "contract": contract})
    _expect(path, status, answer, (200, 201), "")
    if not answer["routed"]:
        print(f"{PROG}: warning: {answer['message']}", file=sys.stderr)
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    what = "created" if status == 201 else ("re-pointed" if answer["changed"] else "unchanged")
    print(
        f"{args.namespace}/{answer['name']}: {what}, resolves to {answer['target']} speaking "
        f"{answer['contract']['tool']} v{answer['contract']['version']}"
    )
    return EXIT_OK


def _converter_arguments(parser: argparse.ArgumentParser) -> None:
    add_tool(parser, "publish")
    parser.add_argument("--from", dest="from_", metavar="N", required=True, help="3 or v3")
    parser.add_argument("--to", metavar="N", required=True, help="3 or v3")
    parser.add_argument(
        "--ops",
        metavar="FILE",
        required=True,
        help="the operations, JSON or YAML: a list, or an object with `ops` "
        "(a check's suggested converter as printed) ('-': stdin)",
    )
    add_format(parser)


def _read_ops(path: str) -> list[Any]:
    from registry.documents import DocumentError, parse_document, read_source

    try:
        document = parse_document(read_source(path), path)
    except DocumentError as error:
        raise InputError(str(error)) from None
    if isinstance(document, dict) and "ops" in document:
        document = document["ops"]
    if not isinstance(document, list) or not all(isinstance(op, dict) for op in document):
        raise InputError(f"{path}: expected a list of operations (or an object with `ops`)")
    return document


def run_converter(args: argparse.Namespace) -> int:
    body = {
        "from": version_number(args.from_, "--from"),
        "to": version_number(args.to, "--to"),
        "ops": _read_ops(args.ops),
    }
    path = tool_path(args, None, "") + "/converters"
    status, answer = registry_call(args, "POST", path, body)
    if not _expect(path, status, answer, (200, 201), "converter refused"):
        return EXIT_BREAKING
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    count = len(answer["ops"])
    what = "registered" if answer["created"] else "already registered"
    print(
        f"{args.namespace}/{args.tool}: converter v{answer['from']} -> v{answer['to']} "
        f"{what} ({count} operation{'s' if count != 1 else ''}, verified)"
    )
    return EXIT_OK


VERBS: list[Verb] = [
    Verb("history", "every version of a tool, newest last", _history_arguments, run_history),
    Verb("show", "one version of a tool (default: the current one)", _show_arguments, run_show),
    Verb(
        "deprecate",
        "deprecate a version, with an optional sunset",
        _deprecate_arguments,
        run_deprecate,
    ),
    Verb(
        "retire",
        "retire a version (final); --require-idle refuses while gated servers still see calls",
        _retire_arguments,
        run_retire,
    ),
    Verb(
        "alias",
        "point an old tool name at a tool, speaking a fixed version",
        _alias_arguments,
        run_alias,
    ),
    Verb(
        "converter",
        "register a verified converter from one version to another",
        _converter_arguments,
        run_converter,
    ),
]
