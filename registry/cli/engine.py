"""Engine verbs: `registry diff OLD NEW` and `registry digest FILE` (base install).

registry diff old.json new.json            # a table of changes; exit 1 when breaking
registry diff old.yaml new.yaml --format json
registry digest tool.yaml                  # sha256 of RFC 8785 JSON, without _meta
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import Any, TextIO

import msgspec

from registry.canonical import DigestError, digest
from registry.cli.common import EXIT_BREAKING, EXIT_OK, InputError, Verb, compact
from registry.compat import (
    Change,
    ChangeReport,
    ClassificationError,
    Severity,
    Side,
    classify,
    classify_schemas,
)
from registry.definitions import (
    DefinitionError,
    is_manifest,
    normalize_document,
    validate_definition,
)
from registry.documents import DocumentError, locate, parse_document, read_source

__all__ = ["VERBS", "run_diff", "run_digest"]

# -- reading input files ------------------------------------------------------


@dataclass(frozen=True)
class _InputFile:
    name: str
    raw: bytes
    document: Any


def _read(path: str) -> _InputFile:
    try:
        raw = read_source(path)
        return _InputFile(path, raw, parse_document(raw, path))
    except DocumentError as error:
        raise InputError(str(error)) from None


def _read_definition(path: str) -> tuple[_InputFile, dict[str, Any]]:
    """A tool definition from a file holding one, or a bare JSON Schema."""
    source = _read(path)
    try:
        definition = normalize_document(source.document)
        validate_definition(definition)
    except DefinitionError as error:
        raise _located(source, error.message, error.pointer) from None
    return source, definition


def _located(source: _InputFile, message: str, pointer: str) -> InputError:
    """`file:line:column: pointer: message`, the pointer as written in the file
    (a manifest holds the definition under `tool`; a bare schema file is the
    definition's `inputSchema`)."""
    if is_manifest(source.document):
        pointer = "/tool" + pointer
        position = locate(source.raw, pointer)
    elif not _is_definition(source.document) and (
        pointer == "/inputSchema" or pointer.startswith("/inputSchema/")
    ):
        pointer = pointer.removeprefix("/inputSchema")
        position = locate(source.raw, pointer)
    else:
        position = locate(source.raw, pointer) if pointer else None
    where = source.name
    if position is not None:
        where += f":{position[0]}:{position[1]}"
    return InputError(f"{where}: {pointer}: {message}" if pointer else f"{where}: {message}")


def _is_definition(document: Any) -> bool:
    return isinstance(document, dict) and "inputSchema" in document


# -- digest ---------------------------------------------------------------------


def _digest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", help="a tool definition or a manifest, JSON or YAML ('-': stdin)"
    )


def run_digest(args: argparse.Namespace) -> int:
    source = _read(args.file)
    document = source.document["tool"] if is_manifest(source.document) else source.document
    try:
        print(digest(document))
    except DigestError as error:
        raise InputError(f"{source.name}: {error}") from None
    return EXIT_OK


# -- diff -------------------------------------------------------------------------


def _diff_arguments(parser: argparse.ArgumentParser) -> None:
    what = "tool definition, manifest (its `tool`) or bare JSON Schema (an inputSchema)"
    parser.add_argument("old", metavar="OLD", help=f"the old {what}")
    parser.add_argument("new", metavar="NEW", help=f"the new {what}")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="auto: when stdout is a terminal and NO_COLOR is not set",
    )


def run_diff(args: argparse.Namespace) -> int:
    old_source, old = _read_definition(args.old)
    new_source, new = _read_definition(args.new)
    try:
        report = classify(old, new)
    except ClassificationError as error:
        culprit = _refused_side((old_source, old), (new_source, new))
        if culprit is None:
            raise InputError(f"{args.old}, {args.new}: {error.message}") from None
        raise _located(culprit, error.message, error.pointer) from None
    if args.format == "json":
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
    else:
        _print_report(report, sys.stdout, _use_color(args.color, sys.stdout))
    return EXIT_BREAKING if report.severity is Severity.BREAKING else EXIT_OK


def _refused_side(*sides: tuple[_InputFile, dict[str, Any]]) -> _InputFile | None:
    """Which file the engine refuses: classify each file's schemas on their own."""
    for source, definition in sides:
        for key, side in (("inputSchema", Side.INPUT), ("outputSchema", Side.OUTPUT)):
            if key in definition:
                try:
                    classify_schemas(definition[key], {"type": "object"}, side)
                except ClassificationError:
                    return source
    return None


# -- the text report ------------------------------------------------------------------

_RESET = "\033[0m"
_BOLD = "\033[1m"
_DIM = "\033[2m"
_COLORS = {
    Severity.BREAKING: "\033[1;31m",
    Severity.ADDITIVE: "\033[32m",
    Severity.COSMETIC: "\033[36m",
    Severity.IDENTICAL: "",
}
_VALUE_WIDTH = 40
_HEADERS = ("SEVERITY", "KIND", "PATH", "OLD -> NEW")


def _use_color(mode: str, stream: TextIO) -> bool:
    if mode != "auto":
        return mode == "always"
    # https://no-color.org: any non-empty NO_COLOR turns colour off
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _print_report(report: ChangeReport, out: TextIO, color: bool) -> None:
    # A handful of ANSI codes by hand rather than a terminal library: the base
    # install (what a CI pipeline pulls in) stays small.
    def paint(text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if color and code else text

    rows = [
        (change.severity.value, change.kind.value, change.path, _old_to_new(change))
        for change in report.changes
    ]
    widths = [max(len(cell) for cell in column) for column in zip(_HEADERS, *rows, strict=False)]
    indent = " " * (widths[0] + 2)
    if rows:
        header = "  ".join(h.ljust(w) for h, w in zip(_HEADERS, widths, strict=True)).rstrip()
        print(paint(header, _BOLD), file=out)
    for change, row in zip(report.changes, rows, strict=True):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        cells[0] = paint(cells[0], _COLORS[change.severity])
        print("  ".join(cells).rstrip(), file=out)
        print(f"{indent}{change.message}", file=out)
        if change.severity is Severity.BREAKING:
            if change.witness is not None:
                print(paint(f"{indent}witness: {compact(change.witness)}", _DIM), file=out)
            if change.suggested_op is not None:
                print(paint(f"{indent}fix:     {compact(change.suggested_op)}", _DIM), file=out)
    print(paint(_summary(report), _COLORS[report.severity]), file=out)


def _old_to_new(change: Change) -> str:
    return f"{_shorten(change.old)} -> {_shorten(change.new)}"


def _shorten(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = compact(value)
    return text if len(text) <= _VALUE_WIDTH else text[: _VALUE_WIDTH - 1] + "…"


def _summary(report: ChangeReport) -> str:
    if not report.changes:
        return "identical: no changes"
    counts: dict[Severity, int] = {}
    for change in report.changes:
        counts[change.severity] = counts.get(change.severity, 0) + 1
    parts = [f"{counts[s]} {s.value}" for s in _COLORS if s in counts]
    total = len(report.changes)
    return (
        f"{report.severity.value}: {total} change{'s' if total != 1 else ''} ({', '.join(parts)})"
    )


VERBS: list[Verb] = [
    Verb(
        "diff",
        "classify the change from OLD to NEW (tool definitions or bare JSON Schemas)",
        _diff_arguments,
        run_diff,
    ),
    Verb(
        "digest",
        "print the canonical digest (sha256 of RFC 8785 JSON, without _meta) of a definition",
        _digest_arguments,
        run_digest,
    ),
]
