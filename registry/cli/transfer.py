"""`registry export`, `registry import`, `registry mode`: moving a registry's records.

    registry export --output billing.jsonl --namespace billing     # the database, or --url
    registry import billing.jsonl --mode import
    registry mode billing --set read-write                         # over HTTP

`export` and `import` work on the database (`--database-url`, or the embedded
PostgreSQL under `--data-dir`, as `migrate` and `token` do) or, given `--url`
(or `REGISTRY_URL` when no database flag is given), through the HTTP API with
an admin token (`GET /v1/export`, `POST /v1/import`). Either way the file
streams: neither side holds the registry in memory. The file format is
`registry.export_format` (docs/operations.md). An export is written to a
temporary file beside `--output` and renamed once its end record is in, so a
failed export never leaves a file that looks whole; `-` is stdout (and, for
import, stdin).

Exit codes: 0 done; 1 the import was refused by the registry (a namespace it
holds exists there already, or a mode refuses it); 2 a bad file (the line and
what is wrong with it), bad flags or an unreachable registry.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

import msgspec

from registry.cli.common import (
    EXIT_BREAKING,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Failed,
    InputError,
    Verb,
    one_line,
    registry_token,
    registry_url,
    required_registry_url,
)
from registry.cli.service import database_arguments, run_on_database, with_schema_errors
from registry.export_format import (
    MEDIA_TYPE,
    EndRecord,
    ExportFileError,
    Header,
    split_lines,
)

__all__ = ["VERBS", "run_export", "run_import", "run_mode"]

CHUNK: Final = 256 * 1024
TIMEOUT: Final = 600.0  # seconds an HTTP export or import may wait on the other side
MODES: Final = ("read-write", "read-only", "import")  # registry.store.modes.MODES


def _where_arguments(parser: argparse.ArgumentParser, scope: str) -> None:
    database_arguments(parser)
    parser.add_argument(
        "--url", help="work through this registry's HTTP API instead (env REGISTRY_URL)"
    )
    parser.add_argument("--token", help=f"with --url: a token with {scope} (env REGISTRY_TOKEN)")


def _over_http(args: argparse.Namespace) -> str | None:
    """The registry URL to go through, or None to work on the database: `--url`, else
    `REGISTRY_URL` unless a database flag was given."""
    if args.url and (args.database_url or args.data_dir):
        raise InputError("give --url or a database (--database-url, --data-dir), not both")
    if args.url or args.database_url or args.data_dir:
        return str(args.url) if args.url else None
    return registry_url(args)


# -- export ------------------------------------------------------------------------


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", "-o", required=True, metavar="FILE", help="the file to write (- : stdout)"
    )
    parser.add_argument(
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="a namespace to export (repeat for several; default: the whole registry)",
    )
    parser.add_argument("--usage", action="store_true", help="include usage counts")
    _where_arguments(parser, "admin on what it exports")


@contextmanager
def _output(path: str) -> Iterator[IO[bytes]]:
    """The file to write, renamed into place only when the block ends without error."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(path)
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.replace(temp, target)
    except BaseException:
        os.unlink(temp)
        raise


_NOUNS: Final = {
    "namespace": ("namespace", "namespaces"),
    "tool": ("tool", "tools"),
    "version": ("version", "versions"),
    "review": ("review", "reviews"),
    "converter": ("converter", "converters"),
    "alias": ("alias", "aliases"),
    "policy": ("policy", "policies"),
    "capabilities": ("capability record", "capability records"),
    "usage": ("usage count", "usage counts"),
    "audit": ("audit event", "audit events"),
}


def _counted(counts: dict[str, int]) -> str:
    """`2 namespaces, 1 tool, ...` in file order."""
    return ", ".join(f"{n} {_NOUNS.get(kind, (kind, kind))[n != 1]}" for kind, n in counts.items())


def _summary(last: bytes, output: str) -> str:
    try:
        end = msgspec.json.decode(last, type=EndRecord)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise InputError("the export ended before its end record: nothing was written") from None
    where = "stdout" if output == "-" else output
    return f"exported {end.records} records ({_counted(end.counts) or 'none'}) to {where}"


def run_export(args: argparse.Namespace) -> int:
    for name in args.namespace:
        _check_namespace(name)
    url = _over_http(args)
    if url is not None:
        last = _export_http(args, url)
    else:
        last = run_on_database(args, with_schema_errors(lambda dsn: _export_database(args, dsn)))
    print(_summary(last, args.output), file=sys.stderr)
    return EXIT_OK


async def _export_database(args: argparse.Namespace, dsn: str) -> bytes:
    from registry.server import connect
    from registry.store import NamespaceNotFound
    from registry.store.transfer import export_lines, record_export

    reader, auditor = await connect(dsn), await connect(dsn)
    try:
        lines = export_lines(reader, args.namespace or None, usage=args.usage)
        try:
            first = await anext(lines)
        except NamespaceNotFound as error:
            raise InputError(f"namespace {error.namespace} does not exist") from None
        await record_export(
            auditor, msgspec.json.decode(first, type=Header), actor="cli", request_id=None
        )
        last = first
        with _output(args.output) as out:
            out.write(first)
            async for line in lines:
                out.write(line)
                last = line
            if not last.startswith(b'{"kind":"end"'):
                raise InputError("the export ended before its end record: nothing was written")
        return last
    finally:
        await reader.close()
        await auditor.close()


def _export_http(args: argparse.Namespace, url: str) -> bytes:
    import httpx

    target = f"{url.rstrip('/')}/v1/export"
    params = [("namespace", name) for name in args.namespace]
    if args.usage:
        params.append(("usage", "true"))
    try:
        with httpx.stream(
            "GET", target, params=params, headers=_auth(args), timeout=TIMEOUT
        ) as response:
            if response.status_code != 200:
                response.read()
                raise InputError(_problem(target, response))
            last = b""
            with _output(args.output) as out:
                tail = b""
                for chunk in response.iter_bytes(CHUNK):
                    out.write(chunk)
                    tail = (tail + chunk)[-65536:]  # the end record is a few hundred bytes
                last = tail.rstrip(b"\n").rpartition(b"\n")[2]
                if not last.startswith(b'{"kind":"end"'):
                    raise InputError(f"{target}: the export ended early: nothing was written")
            return last
    except httpx.HTTPError as error:
        raise InputError(f"{target}: {type(error).__name__}: {error}") from None


# -- import ------------------------------------------------------------------------


def _import_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="an export file (- : stdin)")
    parser.add_argument(
        "--mode",
        choices=("import", "read-only"),
        help="give the imported namespaces this mode (import: they refuse publishes until "
        "`registry mode NS --set read-write` at the switch)",
    )
    _where_arguments(parser, "admin on the namespaces of the file (*:admin for a whole registry)")


@contextmanager
def _input(path: str) -> Iterator[IO[bytes]]:
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise InputError(f"{path}: {error.strerror or error}") from None
    with handle:
        yield handle


def _chunks(handle: IO[bytes]) -> Iterator[bytes]:
    while chunk := handle.read(CHUNK):
        yield chunk


def run_import(args: argparse.Namespace) -> int:
    url = _over_http(args)
    try:
        with _input(args.file) as handle:
            if url is not None:
                answer = _import_http(args, url, handle)
            else:
                answer = run_on_database(
                    args, with_schema_errors(lambda dsn: _import_database(args, dsn, handle))
                )
    except Failed as failed:
        for line in failed.lines:
            print(f"{PROG}: {line}", file=sys.stderr)
        return failed.code
    print(
        f"imported {', '.join(answer['namespaces']) or 'no namespace'} "
        f"({_counted(answer['counts']) or 'no record'}); "
        f"{answer['verified_digests']} digests verified"
        + (f"; mode {args.mode}" if args.mode else ""),
        file=sys.stderr,
    )
    return EXIT_OK


async def _import_database(args: argparse.Namespace, dsn: str, handle: IO[bytes]) -> Any:
    from registry.server import connect
    from registry.store.transfer import ImportRefused, import_lines

    async def lines() -> AsyncIterator[tuple[int, bytes]]:
        for found in split_lines(_chunks(handle)):
            yield found

    conn = await connect(dsn)
    try:
        summary = await import_lines(conn, lines(), actor="cli", request_id=None, mode=args.mode)
    except ImportRefused as refused:
        code = EXIT_BREAKING if refused.reason != "invalid" else EXIT_USAGE
        raise Failed([f"{args.file}: {one_line(str(refused))}"], code) from None
    except ExportFileError as error:  # a line too long, found before the importer saw it
        raise InputError(f"{args.file}: {error}") from None
    finally:
        await conn.close()
    return msgspec.to_builtins(summary)


def _import_http(args: argparse.Namespace, url: str, handle: IO[bytes]) -> Any:
    import httpx

    target = f"{url.rstrip('/')}/v1/import"
    params = {"mode": args.mode} if args.mode else {}
    headers = {**_auth(args), "Content-Type": MEDIA_TYPE}
    try:
        response = httpx.post(
            target, params=params, content=_chunks(handle), headers=headers, timeout=TIMEOUT
        )
    except httpx.HTTPError as error:
        raise InputError(f"{target}: {type(error).__name__}: {error}") from None
    if response.status_code == 201:
        return response.json()
    code = EXIT_BREAKING if response.status_code == 409 else EXIT_USAGE
    raise Failed([f"{args.file}: {_problem(target, response)}"], code)


# -- mode --------------------------------------------------------------------------


def _mode_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "namespace", nargs="?", metavar="NAMESPACE", help="a namespace (default: the registry)"
    )
    parser.add_argument(
        "--set",
        dest="new_mode",
        choices=(*MODES, "inherit"),
        help="set it (inherit: the namespace follows the registry's mode again)",
    )
    parser.add_argument("--reason", default="", help="why, kept in the audit log")
    parser.add_argument("--url", help="the registry's base URL (env REGISTRY_URL)")
    parser.add_argument("--token", help="an admin token to set a mode (env REGISTRY_TOKEN)")


def run_mode(args: argparse.Namespace) -> int:
    from registry.cli.common import registry_request

    url = required_registry_url(args).rstrip("/")
    if args.namespace is not None:
        _check_namespace(args.namespace)
    target = f"{url}/v1/namespaces/{args.namespace}/mode" if args.namespace else f"{url}/v1/mode"
    if args.new_mode == "inherit" and args.namespace is None:
        raise InputError("--set inherit is for a namespace: the registry always has a mode")
    if args.new_mode is None:
        response = registry_request("GET", target, registry_token(args))
    else:
        mode = None if args.new_mode == "inherit" else args.new_mode
        body = {"mode": mode, "reason": args.reason}
        response = registry_request("PUT", target, registry_token(args), body)
    if response.status_code != 200:
        raise InputError(_problem(target, response))
    answer = response.json()
    subject = args.namespace or "registry"
    where = "" if answer["scope"] == "namespace" or not args.namespace else " (the registry's)"
    reason = f": {answer['reason']}" if answer["reason"] else ""
    print(f"{subject}: {answer['mode']}{where}{reason}")
    return EXIT_OK


# -- shared ------------------------------------------------------------------------


def _check_namespace(name: str) -> None:
    import re

    from registry.cli.common import NAMESPACE_PATTERN

    if not re.fullmatch(NAMESPACE_PATTERN, name):
        raise InputError(f"{name!r} is not a namespace ({NAMESPACE_PATTERN})")


def _auth(args: argparse.Namespace) -> dict[str, str]:
    token = registry_token(args)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _problem(target: str, response: Any) -> str:
    try:
        detail = response.json().get("detail") or response.text
    except ValueError:
        detail = response.text
    return f"{target}: HTTP {response.status_code}: {one_line(str(detail))}"


VERBS: list[Verb] = [
    Verb(
        "export",
        "write namespaces (default: the whole registry) to a file: every version, review, "
        "converter, alias, policy, capability record and audit event",
        _export_arguments,
        run_export,
    ),
    Verb(
        "import",
        "land an export file in this registry's new namespaces, all or nothing, digests verified",
        _import_arguments,
        run_import,
    ),
    Verb(
        "mode",
        "show or set the registry's or a namespace's mode: read-write, read-only, import",
        _mode_arguments,
        run_mode,
    ),
]
