"""The service's settings: flags win over the environment (docs/contract.md "CLI")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Final

import msgspec

from registry.policy.callers import parse_duration

__all__ = ["BODY_READ_TIMEOUT", "HEADER_READ_TIMEOUT", "Settings"]

_TRUE = {"1", "true", "yes", "on"}
MAX_TIMEOUT: Final = 3600.0
Seconds = Annotated[float, msgspec.Meta(gt=0, le=MAX_TIMEOUT)]
DAY: Final = 86400
Duration = Annotated[int, msgspec.Meta(ge=1, le=3660 * DAY)]
HEADER_READ_TIMEOUT: Final = 10.0
BODY_READ_TIMEOUT: Final = 30.0


_COUNTS: Final = frozenset(
    {
        "pool_min",
        "pool_max",
        "max_connections",
        "max_waiters",
        "max_waiters_per_token",
        "read_pool_max",
        "analysis_workers",
        "analysis_per_token",
        "definition_max_bytes",
        "definition_max_nodes",
        "definition_max_properties",
        "definition_max_branches",
        "definition_max_depth",
    }
)
_FLAGS: Final = frozenset({"open_reads", "metrics_open", "trust_proxy"})
_DEFAULT_WORKERS: Final = max(1, min(4, os.cpu_count() or 1))


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    database_url: str | None = None  # None: embedded PostgreSQL under data_dir
    data_dir: str = "./.registry"
    host: str = "127.0.0.1"
    port: int = 8080
    bootstrap_token: str | None = None  # accepted with scope *:admin when set
    open_reads: bool = False  # anonymous callers may read
    metrics_token: str | None = None  # when set, /metrics takes it as a bearer token
    metrics_open: bool = False  # /metrics without any token (otherwise it needs one)
    # X-Forwarded-Proto from the proxy in front is believed (the console's Secure cookie)
    trust_proxy: bool = False
    max_body_bytes: int = 4 * 1024 * 1024
    max_wait_seconds: int = 60
    header_read_timeout: Seconds = HEADER_READ_TIMEOUT  # for a request's headers (granian)
    body_read_timeout: Seconds = BODY_READ_TIMEOUT  # for a request's body, from its headers
    pool_min: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 2
    pool_max: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10
    statement_timeout_ms: int = 10_000
    # None: derived from the file-descriptor limit (registry.api.limits)
    max_connections: Annotated[int, msgspec.Meta(ge=1)] | None = None
    max_waiters: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # long-polls (API and console) one token holds at once; None: a quarter of max_waiters
    max_waiters_per_token: Annotated[int, msgspec.Meta(ge=1)] | None = None
    # the analysis workers (registry.api.budget) and the caps (registry.api.caps)
    analysis_workers: Annotated[int, msgspec.Meta(ge=1, le=256)] = _DEFAULT_WORKERS
    analysis_seconds: Seconds = 10.0
    analysis_per_token: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 2
    definition_max_bytes: Annotated[int, msgspec.Meta(ge=1024)] = 512 * 1024
    definition_max_nodes: Annotated[int, msgspec.Meta(ge=16)] = 20_000
    definition_max_properties: Annotated[int, msgspec.Meta(ge=1)] = 1_000
    definition_max_branches: Annotated[int, msgspec.Meta(ge=1)] = 256
    definition_max_depth: Annotated[int, msgspec.Meta(ge=8)] = 160
    # a read replica for history, digest and audit reads (answers may lag the primary)
    read_database_url: str | None = None
    read_pool_max: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10
    # usage counts (registry/api/usage.py); durations in seconds, from "30d"-style text
    usage_retention: Duration = 30 * DAY  # counts older than this are deleted
    retire_warn_window: Duration = 7 * DAY  # a retirement warns of calls this recent
    require_idle: Duration | None = None  # every retirement needs this much idleness (a floor)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Settings from `REGISTRY_*` variables; `overrides` (flags) that are not None win."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        names = {
            "database_url": "REGISTRY_DATABASE_URL",
            "data_dir": "REGISTRY_DATA_DIR",
            "host": "REGISTRY_HOST",
            "port": "REGISTRY_PORT",
            "bootstrap_token": "REGISTRY_BOOTSTRAP_TOKEN",
            "open_reads": "REGISTRY_OPEN_READS",
            "metrics_token": "REGISTRY_METRICS_TOKEN",
            "metrics_open": "REGISTRY_METRICS_OPEN",
            "trust_proxy": "REGISTRY_TRUST_PROXY",
            "header_read_timeout": "REGISTRY_HEADER_READ_TIMEOUT",
            "body_read_timeout": "REGISTRY_BODY_READ_TIMEOUT",
            "pool_min": "REGISTRY_POOL_MIN",
            "pool_max": "REGISTRY_POOL_MAX",
            "max_connections": "REGISTRY_MAX_CONNECTIONS",
            "max_waiters": "REGISTRY_MAX_WAITERS",
            "max_waiters_per_token": "REGISTRY_MAX_WAITERS_PER_TOKEN",
            "analysis_workers": "REGISTRY_ANALYSIS_WORKERS",
            "analysis_seconds": "REGISTRY_ANALYSIS_SECONDS",
            "analysis_per_token": "REGISTRY_ANALYSIS_PER_TOKEN",
            "definition_max_bytes": "REGISTRY_DEFINITION_MAX_BYTES",
            "definition_max_nodes": "REGISTRY_DEFINITION_MAX_NODES",
            "definition_max_properties": "REGISTRY_DEFINITION_MAX_PROPERTIES",
            "definition_max_branches": "REGISTRY_DEFINITION_MAX_BRANCHES",
            "definition_max_depth": "REGISTRY_DEFINITION_MAX_DEPTH",
            "read_database_url": "REGISTRY_READ_DATABASE_URL",
            "read_pool_max": "REGISTRY_READ_POOL_MAX",
            "usage_retention": "REGISTRY_USAGE_RETENTION",
            "retire_warn_window": "REGISTRY_RETIRE_WARN_WINDOW",
            "require_idle": "REGISTRY_REQUIRE_IDLE",
        }
        for field, variable in names.items():
            raw = env.get(variable)
            if raw is None or raw == "":
                continue
            if field == "port":
                if not raw.isdigit() or not 0 < int(raw) < 65536:
                    raise ValueError(f"{variable}={raw!r} is not a TCP port")
                values[field] = int(raw)
            elif field in _COUNTS:
                if not raw.strip().isdigit() or int(raw) < 1 - (field == "pool_min"):
                    raise ValueError(f"{variable}={raw!r} is not a positive whole number")
                values[field] = int(raw)
            elif field in _FLAGS:
                values[field] = raw.strip().lower() in _TRUE
            elif field.endswith("_timeout") or field == "analysis_seconds":
                values[field] = _seconds(variable, raw)
            elif field in _DURATIONS:
                values[field] = _duration(variable, raw)
            else:
                values[field] = raw
        values.update({k: v for k, v in overrides.items() if v is not None})
        return msgspec.convert(values, cls)


_DURATIONS: Final = frozenset({"usage_retention", "retire_warn_window", "require_idle"})


def _duration(variable: str, raw: str) -> int:
    try:
        return int(parse_duration(raw).total_seconds())
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None


def _seconds(variable: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_TIMEOUT:
        raise ValueError(
            f"{variable}={raw!r} is not a number of seconds (0 < s <= {MAX_TIMEOUT:g})"
        )
    return value
