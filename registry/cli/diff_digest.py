"""The `diff` and `digest` verbs (base install): what two definitions differ in, a digest.

registry diff old.json new.json            # a table of changes; exit 1 when breaking
registry diff old.yaml new.yaml --format json
registry diff billing db.query 2 3         # the same, as the registry reports it (lifecycle.py)
registry digest tool.yaml                  # sha256 of RFC 8785 JSON, without _meta
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

import msgspec

from registry.canonical import DigestError, digest
from registry.cli.common import EXIT_BREAKING, EXIT_OK, InputError, Verb
from registry.cli.report_text import print_report, use_color
from registry.compat import ClassificationError, Severity, Side
from registry.definitions import (
    DefinitionError,
    is_manifest,
    normalize_document,
    validate_definition,
)
from registry.documents import DocumentError, locate, located, parse_document, read_source

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
    """The digest of a definition: a file holding one, a manifest's `tool`, or a publish
    body's `definition`; anything else is refused rather than digested as it is."""
    source = _read(args.file)
    document, pointer = source.document, ""
    if is_manifest(document):
        document, pointer = document["tool"], "/tool"
    elif isinstance(document, dict) and isinstance(document.get("definition"), dict):
        document, pointer = document["definition"], "/definition"
    if not pointer and not _is_definition(document):
        raise InputError(
            f"{source.name}: not a tool definition (an object with `inputSchema`), a manifest "
            "or a publish body (its `definition`)"
        )
    try:
        validate_definition(document)
        print(digest(document))
    except DefinitionError as error:
        at = pointer + error.pointer
        line, column = locate(source.raw, at) or (None, None)
        raise InputError(located(source.name, line, column, at, error.message)) from None
    except DigestError as error:
        raise InputError(f"{source.name}: {error}") from None
    return EXIT_OK


# -- diff -------------------------------------------------------------------------


class _Operands(argparse.Action):
    """Two files, or NAMESPACE TOOL OLD NEW: any other count is a usage error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if len(values) not in (2, 4):
            parser.error(
                "diff takes two files (OLD NEW) or a tool on a registry "
                f"(NAMESPACE TOOL OLD NEW), not {len(values)} operand"
                + ("s" if len(values) != 1 else "")
            )
        setattr(namespace, self.dest, values)


def _diff_arguments(parser: argparse.ArgumentParser) -> None:
    what = "tool definitions, manifests (their `tool`) or bare JSON Schemas (inputSchemas)"
    parser.usage = (
        "registry diff [options] OLD NEW\n       registry diff [options] NAMESPACE TOOL OLD NEW"
    )
    parser.add_argument(
        "operands",
        metavar="OPERAND",
        nargs="+",
        action=_Operands,
        help=f"two files: the old and new {what}; or a tool and two of its version "
        "numbers on a registry (--url, --token)",
    )
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument("--token", help="a bearer token with NAMESPACE:read (env REGISTRY_TOKEN)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="auto: when stdout is a terminal and NO_COLOR is not set",
    )


def run_diff(args: argparse.Namespace) -> int:
    operands = list(args.operands)
    if len(operands) == 4:
        from registry.cli.lifecycle import run_remote_diff

        return run_remote_diff(args, operands)
    from registry.compat import classify  # the engine: `digest` never loads it

    args.old, args.new = operands
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
        print_report(report, sys.stdout, use_color(args.color, sys.stdout))
    return EXIT_BREAKING if report.severity is Severity.BREAKING else EXIT_OK


def _refused_side(*sides: tuple[_InputFile, dict[str, Any]]) -> _InputFile | None:
    """Which file the engine refuses: classify each file's schemas on their own."""
    from registry.compat import classify_schemas

    for source, definition in sides:
        for key, side in (("inputSchema", Side.INPUT), ("outputSchema", Side.OUTPUT)):
            if key in definition:
                try:
                    classify_schemas(definition[key], {"type": "object"}, side)
                except ClassificationError:
                    return source
    return None


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
