"""`registry lint [DIR ...]`: the lint rules of registry/lint/ over manifests (or a
folder `registry capture` wrote), as the repository's `mcp-registry.yaml` configures them.

    registry lint tools/                  # file:line:col: rule: /pointer: message
    registry lint --format github         # DIRs from mcp-registry.yaml's `manifests`
    registry lint --list                  # every rule, its category, on or off

Exit 0 when nothing is found, 1 when something is, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from registry.lint import Finding
    from registry.manifests import Manifest

from registry.cli.common import EXIT_BREAKING, EXIT_OK, Failed, InputError, Verb, one_line

__all__ = ["VERBS", "run_lint", "write_findings"]


def _lint_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directories",
        metavar="DIR",
        nargs="*",
        help="manifest folders or files (default: mcp-registry.yaml's `manifests`)",
    )
    parser.add_argument("--config", metavar="FILE", help="default: the nearest mcp-registry.yaml")
    parser.add_argument("--format", choices=("text", "json", "github"), default="text")
    parser.add_argument(
        "--list", action="store_true", help="list every rule, its category and whether it is on"
    )


def run_lint(args: argparse.Namespace) -> int:
    from registry.lint import RULES, ConfigError, find, lint_manifests
    from registry.manifests import collect_directory

    try:
        config = find(args.config)
    except ConfigError as error:
        raise InputError(str(error)) from None
    if args.list:
        on = {rule.name for rule in config.rules()}
        for rule in RULES.values():
            state = "on" if rule.name in on else "off"
            print(f"{rule.name:30} {rule.category:12} {state:4} {rule.summary}")
        return EXIT_OK
    folders = args.directories or config.manifest_folders()
    if not folders:
        raise InputError(
            "no DIR given and no `manifests` in an mcp-registry.yaml: name the manifest folders"
        )
    manifests = []
    for folder in folders:
        loaded, errors = collect_directory(folder)
        if errors:
            raise Failed([one_line(str(error)) for error in errors])
        manifests.extend(loaded)
    found = lint_manifests(manifests, config)
    out = sys.stdout
    entries = write_findings(found, args.format, out)
    if args.format == "github":
        _step_summary(entries, len(manifests))
    if args.format == "json":
        out.write(json.dumps({"findings": entries, "tools": len(manifests)}, indent=2) + "\n")
    elif args.format == "text":
        rules = ", ".join(sorted({rule.category for rule in config.rules()})) or "none"
        tools = f"{len(manifests)} tool{'s' if len(manifests) != 1 else ''}"
        count = f"{len(found)} finding{'s' if len(found) != 1 else ''}"
        verdict = f"lint failed: {count} in" if found else "lint passed:"
        print(f"{verdict} {tools} (rules: {rules})", file=out)
    return EXIT_BREAKING if found else EXIT_OK


def write_findings(found: list[tuple[Manifest, Finding]], form: str, out: TextIO) -> list[Any]:
    """Each finding as a line (`text`: `file:line:col: rule: /pointer: message`) or a
    GitHub annotation (`github`); the findings as JSON-ready entries, for every format."""
    from registry.cli.render import display_path, github_command

    entries = []
    for manifest, finding in found:
        pointer = "/tool" + finding.pointer
        position = manifest.position(pointer, key=True, nearest=True)
        line, column = position if position is not None else (None, None)
        entries.append(
            {
                "file": manifest.path,
                "line": line,
                "column": column,
                "tool": manifest.name,
                "rule": finding.rule,
                "category": finding.category,
                "pointer": pointer,
                "message": finding.message,
            }
        )
        if form == "github":
            props = {"file": display_path(manifest.path)}
            if position is not None:
                props["line"], props["col"] = str(line), str(column)
            props["title"] = finding.rule
            out.write(github_command("error", props, f"{pointer}: {finding.message}"))
        elif form == "text":
            where = manifest.path + (f":{line}:{column}" if position is not None else "")
            print(f"{where}: {finding.rule}: {pointer}: {finding.message}", file=out)
    return entries


def _step_summary(entries: list[dict[str, Any]], tools: int) -> None:
    """A markdown table of the findings in the GitHub job summary, when there is one."""
    import os

    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    found = f"{len(entries)} finding{'s' if len(entries) != 1 else ''}"
    lines = [f"### registry lint: {found} in {tools} tool{'s' if tools != 1 else ''}", ""]
    if entries:
        lines += ["| file | line | rule | where | message |", "|---|---|---|---|---|"]
        for entry in entries:
            cells = (entry["file"], entry["line"] or "", entry["rule"], entry["pointer"])
            row = [*(str(cell) for cell in cells), entry["message"]]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n\n")
    except OSError:
        pass  # the summary is a courtesy; the annotations are already out


VERBS: list[Verb] = [
    Verb(
        "lint",
        "named rules over manifests: contradictions, missing descriptions, portability",
        _lint_arguments,
        run_lint,
    )
]
