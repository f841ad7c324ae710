"""`registry doctor`: what is wrong with a running deployment, one line each.

    registry doctor                                   # the embedded registry under ./.registry
    registry doctor --database-url URL [--url URL]    # a managed PostgreSQL, and a replica's API

The checks, each named at the start of its lines:

    database   the database answers (`--database-url`, or the embedded PostgreSQL that
               `registry serve` runs under `--data-dir`)
    migrations every migration this release ships is applied, none was changed after it
               was applied, and none is applied that this release does not know
    roles      the registry's database roles and grants are as documented
               (deploy/registry-role.sql, registry/store/roles.py)
    data-dir   the embedded data directory is private: the directory 0700, its
               password files 0600, pgdata 0700 (embedded only)
    replicas   at least one replica of this release reports to the database
    limits     each replica's connection limits fit its file-descriptor limit, and the
               replicas' connection pools together fit PostgreSQL's max_connections
    clock      this host's clock and every replica's are within `MAX_SKEW` of the
               database's (usage hours and sunsets are judged by them)
    service    with `--url`: the replica answers /readyz

Replicas report their clock and limits every few seconds (registry/api/replicas.py);
a replica silent for `SILENT_AFTER` is not counted. Exit codes (docs/contract.md): 0 no
problem, 1 problems found (printed one a line, then a count), 2 bad flags.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from registry.cli.common import EXIT_BREAKING, EXIT_OK, InputError, Verb, quiet_logs, registry_url
from registry.cli.service import database_arguments, settings_of

__all__ = ["MAX_SKEW", "SILENT_AFTER", "VERBS", "run_doctor"]

MAX_SKEW: Final = timedelta(seconds=1)
SILENT_AFTER: Final = timedelta(seconds=60)
CONNECT_TIMEOUT: Final = 5.0
CHECKS: Final = (
    "database",
    "migrations",
    "roles",
    "data-dir",
    "replicas",
    "limits",
    "clock",
)

Findings = list[tuple[str, str]]


def _arguments(parser: argparse.ArgumentParser) -> None:
    database_arguments(parser)
    parser.add_argument("--url", help="also ask this replica's /readyz (env REGISTRY_URL)")


def run_doctor(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    quiet_logs()
    findings: Findings = []
    checks = list(CHECKS)
    if settings.database_url is None:
        findings += _data_dir(Path(settings.data_dir).expanduser())
    else:
        checks.remove("data-dir")
    dsn = settings.database_url or _embedded_dsn(settings.data_dir, findings)
    if dsn is not None:
        findings += asyncio.run(_database(dsn))
    url = registry_url(args)
    if url:
        checks.append("service")
        findings += _service(url)
    for check, problem in findings:
        print(f"{check}: {problem}")
    noun = "problem" if len(findings) == 1 else "problems"
    print(f"{len(findings) or 'no'} {noun} ({len(checks)} checks)")
    return EXIT_BREAKING if findings else EXIT_OK


def _embedded_dsn(data_dir: str, findings: Findings) -> str | None:
    try:
        from registry.server import running_embedded_dsn
    except ImportError as error:
        raise InputError(f"doctor needs the [server] extra ({error.name or error})") from None
    dsn = running_embedded_dsn(data_dir)
    if dsn is None:
        findings.append(
            (
                "database",
                f"no registry is serving on {Path(data_dir).expanduser().resolve()} (its "
                "embedded PostgreSQL is not running): start `registry serve`, or pass "
                "--database-url",
            )
        )
    return dsn


# -- the data directory ------------------------------------------------------------

# what each file of the embedded data directory may allow beyond its owner
_PRIVATE: Final = (("password", 0o600), ("app-password", 0o600), ("pgdata", 0o700))


def _data_dir(path: Path) -> Findings:
    if not (path / "pgdata" / "PG_VERSION").is_file():
        return [("data-dir", f"{path.resolve()} holds no registry (no pgdata/ there)")]
    found: Findings = []
    # run as root, the server's own OS user may search (o+x) the directory, no more
    allowed = 0o701 if os.geteuid() == 0 else 0o700
    for name, mode in (("", allowed), *_PRIVATE):
        target = path / name if name else path
        try:
            actual = stat.S_IMODE(target.stat().st_mode)
        except OSError as error:
            found.append(("data-dir", f"{target}: {error.strerror or error}"))
            continue
        if actual & ~mode:
            found.append(
                (
                    "data-dir",
                    f"{target} is mode {actual:04o}, not {mode:04o}: other users can "
                    f"{'read' if actual & 0o044 else 'reach'} it (chmod {mode:o} {target})",
                )
            )
    return found


# -- the database ------------------------------------------------------------------


async def _database(dsn: str) -> Findings:
    import asyncpg  # type: ignore[import-untyped, unused-ignore]

    from registry.server import ServeError, connect

    try:
        conn = await connect(dsn, timeout=CONNECT_TIMEOUT)
    except ServeError as error:
        return [("database", str(error))]
    try:
        found = await _migrations(conn)
        if any(check == "migrations" for check, _ in found) and await _no_schema(conn):
            return found
        found += await _roles(conn)
        found += await _replicas(conn)
        return found
    except asyncpg.PostgresError as error:
        return [*found, ("database", f"a check's query failed: {error}")]
    finally:
        await conn.close()


async def _no_schema(conn: Any) -> bool:
    return not await conn.fetchval("SELECT to_regclass('replicas') IS NOT NULL")


async def _migrations(conn: Any) -> Findings:
    from registry.store.health import migration_state
    from registry.store.migrations import MigrationError

    try:
        state = await migration_state(conn)
    except MigrationError as error:
        return [("migrations", str(error))]
    found: Findings = []
    if state.pending:
        found.append(
            (
                "migrations",
                f"{len(state.pending)} of {state.known} not applied ({', '.join(state.pending)}): "
                "run `registry migrate`",
            )
        )
    for name in state.changed:
        found.append(("migrations", f"{name} was changed after it was applied"))
    if state.unknown:
        found.append(
            (
                "migrations",
                f"applied here but unknown to this release ({', '.join(state.unknown)}): "
                "a newer release migrated this database; upgrade this one",
            )
        )
    return found


async def _roles(conn: Any) -> Findings:
    """The arrangement registry/store/roles.py documents: an owner role beside the app's
    when it names one (`OWNER_ROLE`), the app's role alone otherwise."""
    from registry.store import roles
    from registry.store.health import role_findings

    owner: str | None = getattr(roles, "OWNER_ROLE", None)
    user = await conn.fetchval("SELECT current_user")
    app = roles.APP_ROLE if user in (roles.APP_ROLE, owner) else str(user)
    if owner is not None and app != roles.APP_ROLE:
        owner = f"{app}_owner"
    found = await role_findings(conn, app_role=app, owner_role=owner)
    return [("roles", problem) for problem in found]


async def _replicas(conn: Any) -> Findings:
    from registry.store.health import server_facts
    from registry.store.replicas import live_replicas

    before = datetime.now(UTC)
    facts = await server_facts(conn)
    after = datetime.now(UTC)
    found: Findings = []
    here = before + (after - before) / 2 - facts.now
    if abs(here) > MAX_SKEW:
        found.append(("clock", f"this host's clock is {_seconds(here)} the database's"))
    replicas = await live_replicas(conn, within=SILENT_AFTER)
    if not replicas:
        found.append(
            (
                "replicas",
                f"none has reported within {SILENT_AFTER.seconds} s: no `registry serve` of "
                "this release runs against this database",
            )
        )
    pools = 0
    for replica in replicas:
        limits = replica.limits
        needs, fd_limit = limits.get("needs_fds", 0), limits.get("fd_limit", 0)
        if needs > fd_limit:
            found.append(
                (
                    "limits",
                    f"replica {replica.replica}: {limits.get('max_connections')} connections "
                    f"need about {needs} file descriptors, its limit is {fd_limit} (raise "
                    "`ulimit -n` / LimitNOFILE, or lower REGISTRY_MAX_CONNECTIONS)",
                )
            )
        pools += int(limits.get("pool_max", 0)) + 1  # + its LISTEN connection
        if abs(replica.skew) > MAX_SKEW:
            found.append(
                (
                    "clock",
                    f"replica {replica.replica}'s clock is {_seconds(replica.skew)} the "
                    "database's (usage hours and sunsets are judged by it: sync it with NTP)",
                )
            )
    allowed = facts.max_connections - facts.reserved_connections
    if pools + 1 > allowed:
        found.append(
            (
                "limits",
                f"the {len(replicas)} replicas may open {pools} connections, PostgreSQL allows "
                f"{allowed} ({facts.max_connections} max_connections less "
                f"{facts.reserved_connections} reserved): lower REGISTRY_POOL_MAX or raise "
                "max_connections",
            )
        )
    return found


def _seconds(delta: timedelta) -> str:
    value = delta.total_seconds()
    return f"{abs(value):.1f} s {'ahead of' if value > 0 else 'behind'}"


# -- the service ------------------------------------------------------------------


def _service(url: str) -> Findings:
    import httpx

    target = f"{url.rstrip('/')}/readyz"
    try:
        answer = httpx.get(target, timeout=CONNECT_TIMEOUT)
    except httpx.HTTPError as error:
        return [("service", f"{target}: {type(error).__name__}: {error}")]
    if answer.status_code != 200:
        try:
            detail = answer.json().get("detail", answer.text)
        except ValueError:
            detail = answer.text
        return [("service", f"{target} answers {answer.status_code}: {detail}")]
    return []


VERBS: list[Verb] = [
    Verb(
        "doctor",
        "check a running deployment (database, migrations, roles, data directory, limits, "
        "clocks) and print what is wrong, one line each",
        _arguments,
        run_doctor,
    )
]
