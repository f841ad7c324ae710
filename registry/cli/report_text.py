"""A change report as text, for a terminal or a log: one row per change with its
message, the witness and the suggested fix under a breaking one, and a summary.

    print_report(report, sys.stdout, use_color("auto", sys.stdout))
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from registry.cli.common import compact
from registry.compat import Change, ChangeReport, Severity

__all__ = ["print_report", "use_color"]


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


def use_color(mode: str, stream: TextIO) -> bool:
    if mode != "auto":
        return mode == "always"
    # https://no-color.org: any non-empty NO_COLOR turns colour off
    return stream.isatty() and not os.environ.get("NO_COLOR")


def print_report(report: ChangeReport, out: TextIO, color: bool) -> None:
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
