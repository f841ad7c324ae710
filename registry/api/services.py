"""What every handler reaches through `request.app.state.services`."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import asyncpg  # type: ignore[import-untyped, unused-ignore]
import msgspec
import structlog
from litestar.connection import ASGIConnection

from registry import store
from registry.api.auth import BOOTSTRAP_ID, Action, Principal, bearer_secret, matches_secret
from registry.api.budget import Budget
from registry.api.caps import Caps
from registry.api.limits import LimitLog, Limits
from registry.api.longpoll import LongPolls
from registry.api.metrics import Metrics
from registry.api.problems import ApiError, namespace_not_found
from registry.api.revocations import Revocations
from registry.api.settings import Settings
from registry.api.token_lookups import TokenLookups
from registry.api.toolset_cache import ToolsetCache
from registry.store import Db, ToolsetListener

__all__ = [
    "SESSION_TOKEN",
    "Services",
    "actor",
    "principal",
    "reader",
    "replica_read",
    "request_id",
    "services",
    "writer",
]

_T = TypeVar("_T")
_log = structlog.get_logger("registry.api")


@dataclass
class Services:
    settings: Settings
    metrics: Metrics
    cache: ToolsetCache[Any]
    longpolls: LongPolls
    revocations: Revocations
    limits: Limits
    limit_log: LimitLog
    budget: Budget
    caps: Caps
    tokens: TokenLookups  # one query for the tokens of many requests (registry.api.token_lookups)
    db: Db | None = None
    read_db: Db | None = None  # the read replica's pool (Settings.read_database_url)
    listener: ToolsetListener | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # the time usage counts are stamped and judged with (tests move it instead of sleeping)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    @property
    def database(self) -> Db:
        if self.db is None:
            raise ApiError("not-ready", "the service is starting: no database connection yet")
        return self.db


# What a read replica that is not answering raises: the primary answers instead.
_REPLICA_DOWN: tuple[type[Exception], ...] = (
    OSError,
    TimeoutError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
)


async def replica_read(
    request: ASGIConnection[Any, Any, Any, Any],
    query: Callable[[Db], Awaitable[_T]],
    found: Callable[[_T], bool] = bool,
) -> _T:
    """`query` on the read replica when there is one and what it answers is `found`;
    otherwise (none, not there yet, not answering) on the primary. An answer from
    the replica may lag the primary: the response says so (`X-Registry-Read:
    replica`, added by `registry.api.observe`)."""
    svc = services(request)
    if svc.read_db is not None:
        try:
            answer = await query(svc.read_db)
        except _REPLICA_DOWN as exc:
            _log.info("read_replica_unavailable", error=type(exc).__name__)
        else:
            if found(answer):
                request.scope.setdefault("state", {})["read_replica"] = True
                return answer
    return await query(svc.database)


def services(request: ASGIConnection[Any, Any, Any, Any]) -> Services:
    found: Services = request.app.state.services
    return found


def request_id(request: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    value = request.scope.get("state", {}).get("request_id")
    return value if isinstance(value, str) else None


SESSION_TOKEN: Final = "session_token_hash"  # the console's signed-in token, as a hash


async def principal(request: ASGIConnection[Any, Any, Any, Any]) -> Principal:
    """The caller, from its bearer token (cached on the request), or from the token
    a console session stands for (`SESSION_TOKEN`); anonymous without either."""
    scope = request.scope
    state = scope.get("state")
    if state is None:
        state = scope["state"] = {}
    known = state.get("principal")
    if isinstance(known, Principal):
        return known
    secret = bearer_secret(_authorization(scope))
    token_hash = store.hash_token(secret) if secret is not None else state.get(SESSION_TOKEN)
    found = Principal(token_id=None)
    if token_hash is not None:
        svc = services(request)
        bootstrap = svc.settings.bootstrap_token
        if (
            matches_secret(secret, bootstrap)
            if secret is not None
            else bootstrap is not None
            and hmac.compare_digest(token_hash.encode(), store.hash_token(bootstrap).encode())
        ):
            found = Principal(token_id=BOOTSTRAP_ID, scopes=("*:admin",))
        else:
            token = await svc.tokens.lookup(svc.database, token_hash)
            if token is None:
                raise ApiError(
                    "unauthenticated",
                    "the bearer token is unknown or revoked",
                    headers={"WWW-Authenticate": 'Bearer realm="registry", error="invalid_token"'},
                )
            found = Principal(token_id=token.id, scopes=tuple(token.scopes))
    state["principal"] = found
    state["actor"] = found.token_id
    return found


async def reader(request: ASGIConnection[Any, Any, Any, Any], ns: str) -> Services:
    """The services, once the caller may read `ns` (open reads, or `ns:read`); else 401/403.
    The app's guard (registry.api.access) asks the same first; the console's pages,
    which call handlers directly, rely on this."""
    svc = services(request)
    who = await principal(request)
    if not who.readable(ns, svc.settings.open_reads):
        who.require(ns, "read")
    return svc


async def writer(
    request: ASGIConnection[Any, Any, Any, Any], ns: str, action: Action = "publish"
) -> Services:
    """The services, once the caller holds `ns:{action}` (or higher); else 401/403."""
    svc = services(request)
    who = await principal(request)
    who.require(ns, action)
    return svc


async def require_namespace(svc: Services, ns: str) -> None:
    """404 `namespace-not-found` (saying how to create it) unless `ns` exists."""
    if await store.get_namespace(svc.database, ns) is None:
        raise namespace_not_found(ns)


def _authorization(scope: Any) -> str | None:
    """The first Authorization header (what `request.headers.get` answers), without
    building the request's header multidict."""
    for key, value in scope["headers"]:
        if key == b"authorization":
            return str(value.decode("latin-1"))
    return None


def actor(request: ASGIConnection[Any, Any, Any, Any]) -> str | None:
    value = request.scope.get("state", {}).get("actor")
    return value if isinstance(value, str) else None


def decode(raw: bytes, kind: type[Any]) -> Any:
    """Decode a JSON body: invalid JSON -> 400, the wrong shape -> 422 naming the field."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        raise ApiError("invalid-body", str(exc)) from exc
    except msgspec.DecodeError as exc:
        raise ApiError("invalid-json", str(exc)) from exc
