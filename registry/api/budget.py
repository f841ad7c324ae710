"""Bounded work per request: classification, validation and diff in worker processes.

    budget = Budget(workers=2, seconds=10.0, per_token=2, metrics=metrics, limits=limit_log)
    report = await budget.run(request, analysis.report, old, new)   # in a worker process
    budget.close()                                                  # at shutdown

The engine is pure Python: in a thread it holds the GIL, and a 30,000-property
schema or two 1,000-branch unions held it for seconds while every other
namespace's reads waited (issue 24; `bench/adversarial_bench.py` measures
threads against processes). So the work runs in worker processes
(`pebble.ProcessPool`, forkserver, the workers at a lower CPU priority than
the event loop), and each call is bounded:

* a token has at most `per_token` calls running at once: its next ones wait
  for one of its own to finish, so one token never holds more than its share
  of the workers and another token's call gets the next free one. At most
  `QUEUED_PER_RUNNING` times that many of one token's calls are admitted
  (running or waiting); one more is refused at once with 429
  `too-many-requests` (`Retry-After`);
* a call waits for a free worker at most until the request's budget ends
  (503 `analysis-busy`, `Retry-After`);
* a request's calls together run at most `seconds` (the budget starts with
  its first call): past it the worker running it is killed (and replaced) and
  the request answers 422 `analysis-over-budget`. A request cancelled
  meanwhile (its client hung up) kills its worker too.

What the workers run lives in `registry.api.analysis`; they raise `ApiError`,
which crosses the process boundary whole. The size caps (`registry.api.caps`)
run first, in the same worker call.

The pool starts in a thread at the app's start (`start`), never on the event
loop, and stops with the app (`close`): its workers are forked by
multiprocessing's forkserver, which has imported what they run (`_PRELOAD`),
so a worker starts, or replaces one killed, in milliseconds. The forkserver
and multiprocessing's resource tracker, one each per process, end with the
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Final, TypeVar

import pebble
import structlog
from litestar.connection import ASGIConnection

from registry.api import analysis
from registry.api.limits import LimitLog
from registry.api.metrics import Metrics
from registry.api.problems import ApiError

__all__ = ["ANONYMOUS", "Budget"]

_T = TypeVar("_T")
_log = structlog.get_logger("registry.budget")

ANONYMOUS: Final = "anonymous"  # the share of every caller without a token (open reads)
RETRY_AFTER_SECONDS: Final = "2"
QUEUED_PER_RUNNING: Final = 16  # a token's calls admitted at once, per call it may run
_DEADLINE: Final = "analysis_deadline"
# What a worker imports, loaded once into the forkserver that forks every worker: a
# worker then starts in milliseconds rather than the second its imports take (the
# console's diff rows import the console package, and with it Litestar).
_PRELOAD: Final = ["registry.api.analysis", "registry.console.views", "pebble"]


class Budget:
    """Worker processes, the per-token share and the per-request time budget (see the
    module docstring). `threads=True` runs the calls in threads instead, which cannot be
    stopped and share the GIL: for `bench/adversarial_bench.py`'s comparison only."""

    def __init__(
        self,
        *,
        workers: int,
        seconds: float,
        per_token: int,
        metrics: Metrics,
        limits: LimitLog,
        threads: bool = False,
    ) -> None:
        self.workers = workers
        self.seconds = seconds
        self.per_token = per_token
        self._metrics = metrics
        self._limits = limits
        self._threads = threads
        self._pool: pebble.ProcessPool | ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()  # the toolset builder's thread submits too
        self._closed = False
        self._free: asyncio.Semaphore | None = None
        self._held: dict[str, int] = {}  # calls admitted, by holder
        self._shares: dict[str, asyncio.Semaphore] = {}  # calls running, by holder
        self.admitted = per_token * QUEUED_PER_RUNNING
        metrics.analysis_running.set_function(lambda: sum(self._held.values()))

    def holder(self, request: ASGIConnection[Any, Any, Any, Any]) -> str:
        """Whose share a request's calls count against: its token, else `ANONYMOUS`."""
        state = request.scope.get("state", {})
        token = state.get("actor")
        return token if isinstance(token, str) else ANONYMOUS

    def start(self) -> None:
        """Start the workers now, rather than at the first request, whose budget would pay
        for it. Returns at once: the pool starts in a thread of its own, since the first
        start of the forkserver (which imports the engine once, for every worker) takes
        about a second, which the event loop does not wait for."""
        threading.Thread(target=self._start, name="analysis-start", daemon=True).start()

    def _start(self) -> None:
        with contextlib.suppress(ApiError):  # closed before it started: nothing to start
            self._started_pool()

    def admitted_of(self, holder: str) -> int:
        """The calls of `holder` admitted: running, or waiting for its share or a worker."""
        return self._held.get(holder, 0)

    def remaining(self, request: ASGIConnection[Any, Any, Any, Any]) -> float:
        """Seconds left of the request's budget (the budget starts with its first call)."""
        loop = asyncio.get_running_loop()
        state = request.scope.setdefault("state", {})
        deadline = state.setdefault(_DEADLINE, loop.time() + self.seconds)
        return float(deadline - loop.time())

    async def run(
        self, request: ASGIConnection[Any, Any, Any, Any], fn: Callable[..., _T], *args: Any
    ) -> _T:
        """`fn(*args)` in a worker, within the request's budget and its token's share."""
        holder = self.holder(request)
        if self._held.get(holder, 0) >= self.admitted:
            self._limits.reached("analysis_per_token", self.admitted)
            raise ApiError(
                "too-many-requests",
                f"this token already has {self.admitted} checks, publishes or diffs being "
                f"analysed or waiting ({QUEUED_PER_RUNNING} x REGISTRY_ANALYSIS_PER_TOKEN); "
                "retry when one has finished",
                headers={"Retry-After": RETRY_AFTER_SECONDS},
                limit={"name": "analysis_admitted_per_token", "maximum": self.admitted},
            )
        self._held[holder] = self._held.get(holder, 0) + 1
        share = self._shares.get(holder)
        if share is None:
            share = self._shares[holder] = asyncio.Semaphore(self.per_token)
        try:
            await self._wait_for(share, request, "analysis_per_token", self.per_token)
            try:
                return await self._run(request, fn, args)
            finally:
                share.release()
        finally:
            left = self._held[holder] - 1
            if left:
                self._held[holder] = left
            else:
                del self._held[holder]
                del self._shares[holder]

    async def _wait_for(
        self,
        semaphore: asyncio.Semaphore,
        request: ASGIConnection[Any, Any, Any, Any],
        limit: str,
        maximum: int,
    ) -> None:
        """`semaphore` acquired before the request's budget ends; else 503 `analysis-busy`
        (422 `analysis-over-budget` when earlier calls of the request spent it all)."""
        remaining = self.remaining(request)
        if remaining <= 0:
            raise self._over_budget()
        try:
            await asyncio.wait_for(semaphore.acquire(), remaining)
        except TimeoutError:
            self._limits.reached(limit, maximum)
            raise ApiError(
                "analysis-busy",
                f"no analysis slot ({limit} {maximum}) came free within this request's "
                f"budget of {self.seconds:g} s; retry shortly",
                headers={"Retry-After": RETRY_AFTER_SECONDS},
                limit={"name": limit, "maximum": maximum},
            ) from None

    async def _run(
        self, request: ASGIConnection[Any, Any, Any, Any], fn: Callable[..., _T], args: Any
    ) -> _T:
        free = self._semaphore()
        await self._wait_for(free, request, "analysis_workers", self.workers)
        try:
            remaining = self.remaining(request)
            if remaining <= 0:
                raise self._over_budget()
            future = await self._submit(fn, args, remaining)
            try:
                return await asyncio.wrap_future(future)
            except (FutureTimeout, TimeoutError):
                raise self._over_budget() from None
            except asyncio.CancelledError:
                future.cancel()  # a running pebble task: its worker is killed and replaced
                raise
            except FutureCancelled:
                raise ApiError(
                    "not-ready", "the analysis was stopped: the service is stopping"
                ) from None
            except pebble.ProcessExpired as exc:
                _log.warning("analysis_worker_died", exitcode=exc.exitcode)
                raise ApiError(
                    "analysis-over-budget",
                    "the analysis worker ended before it finished (out of memory or killed)",
                ) from None
        finally:
            free.release()

    def _over_budget(self) -> ApiError:
        self._metrics.analysis_over_budget.inc()
        return ApiError(
            "analysis-over-budget",
            f"the analysis did not finish within the budget of {self.seconds:g} s "
            "(REGISTRY_ANALYSIS_SECONDS): the definitions are too costly to compare",
            limit={"name": "analysis_seconds", "maximum": self.seconds},
        )

    def _semaphore(self) -> asyncio.Semaphore:
        if self._free is None:
            self._free = asyncio.Semaphore(self.workers)
        return self._free

    def run_blocking(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(*args)` in a worker, from a thread that may block (the toolset builder):
        no share, the budget's seconds as its timeout (`TimeoutError` past it)."""
        future = _schedule(self._started_pool(), fn, args, self.seconds)
        try:
            result: _T = future.result()
        except FutureTimeout:
            self._metrics.analysis_over_budget.inc()
            raise TimeoutError(f"the analysis did not finish within {self.seconds:g} s") from None
        return result

    def _started_pool(self) -> pebble.ProcessPool | ThreadPoolExecutor:
        """The pool, its workers started. It may block (the first start): from a thread."""
        with self._pool_lock:
            if self._closed:
                raise ApiError("not-ready", "the analysis workers stopped: the service is stopping")
            if self._pool is not None:
                return self._pool
            pool: pebble.ProcessPool | ThreadPoolExecutor
            if self._threads:
                pool = ThreadPoolExecutor(self.workers, thread_name_prefix="analysis")
            else:
                context = multiprocessing.get_context("forkserver")
                context.set_forkserver_preload(_PRELOAD)
                pool = pebble.ProcessPool(
                    max_workers=self.workers, initializer=analysis.lower_priority, context=context
                )
                for _ in range(self.workers):  # the first schedule starts every worker
                    pool.schedule(analysis.ready, timeout=60.0)
            self._pool = pool
            return pool

    async def _submit(self, fn: Callable[..., Any], args: Any, timeout: float) -> Future[Any]:
        """`fn(*args)` scheduled in the pool (once it has started: never on the loop)."""
        pool = self._pool
        if pool is None:
            pool = await asyncio.get_running_loop().run_in_executor(None, self._started_pool)
        return _schedule(pool, fn, args, timeout)

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool, self._closed = self._pool, None, True
        if isinstance(pool, pebble.ProcessPool):
            pool.stop()  # type: ignore[no-untyped-call]
            pool.join(timeout=5)
        elif pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _schedule(
    pool: pebble.ProcessPool | ThreadPoolExecutor, fn: Callable[..., Any], args: Any, timeout: float
) -> Future[Any]:
    if isinstance(pool, ThreadPoolExecutor):
        return pool.submit(fn, *args)  # no timeout: a thread cannot be stopped
    future: Future[Any] = pool.schedule(fn, args=args, timeout=timeout)
    return future
