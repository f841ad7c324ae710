"""`registry review`: the versions a namespace holds for review, and the decisions on them
(client verb, base install):

    registry review list billing                       # what waits, oldest first by tool
    registry review show billing db.query 4            # the findings and the diff
    registry review approve billing db.query 4 --reason "the link is our docs"
    registry review reject billing db.query 4 --reason "asks the model to read ~/.ssh"

A namespace whose policy asks for review (`review: risky` or `all`) stores a new
version `pending`: served nowhere until approved. `show` prints its risk findings
and its definition against the version they were found against, as a diff whose
invisible characters are written out (`<U+200B ZERO WIDTH SPACE>`). Approving
needs `NAMESPACE:review` (or admin) and lands the version as its publish would
have; with the policy's `four_eyes`, not by the token that published it.

Each takes `--format text|json` (json: the registry's answer as it is). Exit codes:
0 done, 1 refused on the registry's rules (four eyes, a break now undecided, a
version still called), 2 bad input or another answer.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from registry.cli.common import EXIT_BREAKING, EXIT_OK, PROG, InputError, Verb, one_line
from registry.cli.remote import (
    add_format,
    add_registry,
    namespace_path,
    print_json,
    print_table,
    problem_text,
    registry_call,
    second,
    tool_path,
    version_number,
)

__all__ = ["VERBS", "run_review"]

# the refusals a decision can meet on the registry's rules: exit 1
_REFUSED = frozenset({"four-eyes", "breaking-change", "version-in-use", "illegal-transition"})


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the versions the namespace holds for review")
    listing.add_argument("namespace", metavar="NAMESPACE")
    add_registry(listing, "NAMESPACE:read")
    add_format(listing)
    show = actions.add_parser(
        "show", help="one held version: its risk findings and its diff, hidden characters shown"
    )
    _version_arguments(show, "NAMESPACE:read")
    for verb, what in (
        ("approve", "approve a held version: it lands as its publish would have"),
        ("reject", "reject a held version: final, never served; the record stays"),
    ):
        decision = actions.add_parser(verb, help=what)
        _version_arguments(decision, "NAMESPACE:review (or admin)")
        decision.add_argument(
            "--reason", required=True, help="why (kept with the decision and audited)"
        )


def _version_arguments(parser: argparse.ArgumentParser, scope: str) -> None:
    parser.add_argument("namespace", metavar="NAMESPACE")
    parser.add_argument("tool", metavar="TOOL")
    parser.add_argument("version", metavar="VERSION", help="3 or v3")
    add_registry(parser, scope)
    add_format(parser)


def _problem_type(answer: Any) -> str:
    kind = answer.get("type", "") if isinstance(answer, dict) else ""
    return str(kind).rsplit("/", 1)[-1]


def _get(args: argparse.Namespace, path: str) -> Any:
    status, answer = registry_call(args, "GET", path)
    if status != 200:
        raise InputError(f"{path}: {problem_text(status, answer)}")
    return answer


def run_review(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list(args)
    if args.action == "show":
        return _show(args)
    return _decide(args)


def _list(args: argparse.Namespace) -> int:
    answer = _get(args, f"{namespace_path(args.namespace)}/reviews")
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    waiting = answer["reviews"]
    if not waiting:
        print(f"{args.namespace}: nothing waits for review")
        return EXIT_OK
    count = len(waiting)
    print(f"{args.namespace}: {count} version{'s' if count != 1 else ''} waiting for review")
    rows = [("TOOL", "VERSION", "CURRENT", "HELD BY", "RISKS", "PUBLISHED BY", "PUBLISHED")]
    rows += [
        (
            w["tool"],
            f"v{w['version']}",
            f"v{w['current_version']}" if w["current_version"] else "-",
            w["review"],
            ", ".join(dict.fromkeys(r["kind"] for r in w["risks"])) or "-",
            w["published_by"] or "-",
            second(w["published_at"]),
        )
        for w in waiting
    ]
    print_table(rows)
    return EXIT_OK


def _show(args: argparse.Namespace) -> int:
    from registry.risks.characters import visible
    from registry.risks.shown import review_diff

    number = version_number(args.version, "VERSION")
    held = _get(args, tool_path(args, args.version, "VERSION"))
    listed = _get(args, f"{namespace_path(args.namespace)}/reviews")
    entry = next(
        (w for w in listed["reviews"] if w["tool"] == args.tool and w["version"] == number), None
    )
    if entry is None:
        raise InputError(
            f"{args.namespace}/{args.tool} v{number} is {held['state']}, not waiting for review "
            f"(registry review list {args.namespace})"
        )
    against = entry["against"]
    old = (
        _get(args, tool_path(args, str(against), "VERSION"))["definition"]
        if against is not None
        else None
    )
    if args.format == "json":
        print_json({**entry, "definition": held["definition"], "against_definition": old})
        return EXIT_OK
    print(f"{args.namespace}/{args.tool} v{number}: pending review ({entry['review']})")
    print(f"published by {entry['published_by'] or '-'} at {second(entry['published_at'])}")
    base = f"v{against}" if against is not None else "nothing (a first version)"
    print(f"against:  {base}; current now: v{entry['current_version'] or '-'}")
    for risk in entry["risks"]:
        print(f"risk {risk['kind']} at {risk['path']}: {risk['message']}")
        print(f"  evidence: {one_line(visible(risk['evidence']))}")
    if not entry["risks"]:
        print("no risk finding (the namespace reviews every new version)")
    old_label = f"v{against}" if against is not None else "nothing"
    sys.stdout.writelines(review_diff(old, held["definition"], old_label, f"v{number}"))
    return EXIT_OK


def _decide(args: argparse.Namespace) -> int:
    path = tool_path(args, args.version, "VERSION") + f"/{args.action}"
    status, answer = registry_call(args, "POST", path, {"reason": args.reason})
    if status != 200:
        if _problem_type(answer) in _REFUSED:
            print(f"{PROG}: {args.action} refused: {problem_text(status, answer)}", file=sys.stderr)
            return EXIT_BREAKING
        raise InputError(f"{path}: {problem_text(status, answer)}")
    for warning in answer.get("warnings", []):
        print(f"{PROG}: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        print_json(answer)
        return EXIT_OK
    name = f"{args.namespace}/{args.tool} v{answer['version']}"
    if not answer["changed"]:
        print(f"{name}: already {answer['decision']} ({answer['reason']})")
        return EXIT_OK
    print(f"{name}: {answer['decision']}, now {answer['state']}")
    for label, numbers in (
        ("retired", answer.get("retired", [])),
        ("deprecated", answer.get("deprecated", [])),
        ("superseded (rejected)", answer.get("superseded", [])),
    ):
        if numbers:
            print(f"  {label}: " + ", ".join(f"v{n}" for n in numbers))
    return EXIT_OK


VERBS: list[Verb] = [
    Verb(
        "review",
        "the versions a namespace holds for review: list, show (findings and diff), "
        "approve, reject",
        _arguments,
        run_review,
    ),
]
