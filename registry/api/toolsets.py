"""The toolset machinery of one app: the cache, the thread its builds run in, the long-polls.

    toolsets = Toolsets(metrics, revocations, limits, limit_log, database, listening)
    toolsets.cache        # ToolsetCache: payloads per namespace
    toolsets.longpolls    # LongPolls: woken by every new build
    toolsets.close()      # at shutdown: the build thread goes

Builds run in one worker thread, one at a time: the event loop only reads the
rows (`registry.store.toolset_rows`). The thread has its own `RouteFinder`
(its classification cache is not shared between threads), whose
classifications of pairs it has not seen run in the analysis workers
(`use_budget`): a thread holds the GIL, and a costly pair would hold it from
every other namespace's reads (issue 24).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from registry.api import analysis
from registry.api.budget import Budget
from registry.api.limits import LimitLog
from registry.api.longpoll import LongPolls
from registry.api.metrics import Metrics
from registry.api.revocations import Revocations
from registry.api.toolset_cache import ToolsetCache
from registry.policy.routes import RouteFinder
from registry.policy.toolset import BuiltToolset, ToolsetParts, assemble, build_parts, update_parts
from registry.store import Db
from registry.store.toolset_rows import ToolsetRows, read_toolset_rows

__all__ = ["Toolsets"]


class Toolsets:
    def __init__(
        self,
        metrics: Metrics,
        revocations: Revocations,
        *,
        max_waiters: int,
        max_waiters_per_token: int | None = None,
        limit_log: LimitLog,
        database: Callable[[], Db],
        listening: Callable[[], bool],
    ) -> None:
        self._metrics = metrics
        self._database = database
        self._finder = RouteFinder()
        self._executor: ThreadPoolExecutor | None = None
        self.longpolls = LongPolls(
            limit=max_waiters,
            per_token=max_waiters_per_token,
            revocations=revocations,
            metrics=metrics,
            limits=limit_log,
        )
        self.cache: ToolsetCache[ToolsetRows] = ToolsetCache(
            self._read,
            self._build,
            run=self._run,
            enabled=listening,
            watched=self.longpolls.watched,
        )
        self.cache.subscribe(self.longpolls.changed, self.longpolls.failed)

    def use_budget(self, budget: Budget) -> None:
        """Classify the pairs the builder has not seen in `budget`'s worker processes."""

        def classify(old: Any, new: Any) -> Any:
            return budget.run_blocking(analysis.classify_definitions, old, new)

        self._finder = RouteFinder(classify=classify)

    async def _read(self, namespace: str, tools: frozenset[str] | None) -> ToolsetRows | None:
        return await read_toolset_rows(self._database(), namespace, tools)

    def _build(
        self, parts: ToolsetParts | None, rows: ToolsetRows
    ) -> tuple[ToolsetParts, BuiltToolset]:
        started = time.perf_counter()
        decoded = rows.decode()
        if parts is None or decoded.tools is None:
            kind = "full"
            parts = build_parts(
                rows.namespace,
                decoded.versions,
                decoded.converters,
                decoded.aliases,
                self._finder,
                decoded.now,
                gating=decoded.gating,
            )
        else:
            kind = "tools"
            parts = update_parts(
                parts,
                decoded.tools,
                decoded.versions,
                decoded.converters,
                decoded.aliases,
                self._finder,
                decoded.now,
                gating=decoded.gating,
            )
        built = assemble(parts)
        self._metrics.toolset_builds.inc()
        self._metrics.toolset_build_seconds.labels(kind).observe(time.perf_counter() - started)
        return parts, built

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="toolset-build")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
