"""How many connections and long-polls one replica holds, and what happens at the limit.

    nofile = raise_fd_limit()                      # soft RLIMIT_NOFILE up to the hard one
    limits = Limits.of(settings, nofile)           # settings win; otherwise derived
    log = LimitLog(metrics)
    log.reached("waiters", limits.waiters)         # counted; a warning at most once a minute

Every open connection is a file descriptor, and so is each of the few the
process needs besides (PostgreSQL connections, the LISTEN connection, the
listening socket, log files): `RESERVED_FDS` plus the pool's. By default the
connection limit is what the descriptor limit leaves, and long-polls may take
all but a tenth of it (at least 64), so that a replica full of waiting SDK
watchers still answers publishes, syncs and probes. A limit set above what the
descriptor limit allows is kept, with a warning at start-up: connections past
the descriptor limit fail to be accepted.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from typing import Final

import msgspec
import structlog

from registry.api.metrics import Metrics

__all__ = ["RESERVED_FDS", "LimitLog", "Limits", "raise_fd_limit"]

RESERVED_FDS: Final = 64  # descriptors kept for all but connections, besides the pools'
LOG_INTERVAL: Final = 60.0  # seconds between two warnings about the same limit

_log = structlog.get_logger("registry.limits")


def raise_fd_limit() -> int:
    """Raise the soft descriptor limit to the hard one (as far as allowed); the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return int(soft) if soft != resource.RLIM_INFINITY else 1 << 20


class Limits(msgspec.Struct, frozen=True):
    connections: int  # open connections (idle keep-alives included)
    waiters: int  # long-polls held at once
    fd_limit: int
    needs_fds: int  # descriptors these limits need
    waiters_per_token: int = 1  # long-polls one token (or anonymous address) holds at once

    @classmethod
    def of(
        cls,
        fd_limit: int,
        *,
        pool_fds: int,
        max_connections: int | None = None,
        max_waiters: int | None = None,
        max_waiters_per_token: int | None = None,
    ) -> Limits:
        reserved = RESERVED_FDS + pool_fds
        connections = max_connections or max(fd_limit - reserved, 64)
        waiters = max_waiters or max(connections - max(64, connections // 10), 1)
        per_token = max_waiters_per_token or max(waiters // 4, 1)
        return cls(connections, waiters, fd_limit, connections + reserved, per_token)

    def warnings(self) -> list[str]:
        found = []
        if self.needs_fds > self.fd_limit:
            found.append(
                f"{self.connections} connections need about {self.needs_fds} file descriptors "
                f"but the limit is {self.fd_limit} (raise `ulimit -n` / LimitNOFILE)"
            )
        if self.waiters > self.connections:
            found.append(
                f"max_waiters {self.waiters} is above max_connections {self.connections}: "
                "long-polls past the connection limit wait for a connection"
            )
        return found


class LimitLog:
    """Counts each time a limit is met; says so in the log at most once a minute."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metrics = metrics
        self._interval = interval
        self._clock = clock
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def reached(self, limit: str, value: int) -> None:
        self._metrics.limit_reached.labels(limit).inc()
        self._since[limit] = self._since.get(limit, 0) + 1
        now = self._clock()
        last = self._last.get(limit)
        if last is not None and now - last < self._interval:
            return
        self._last[limit] = now
        _log.warning(
            "limit_reached",
            limit=limit,
            value=value,
            times=self._since.pop(limit),
            detail=(
                f"the {limit} limit ({value}) was reached; see docs/running.md 'Sizing a replica'"
            ),
        )
