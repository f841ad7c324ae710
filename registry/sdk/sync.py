"""Boot sync, the toolset cache and the watcher that keeps a toolset current.

    toolset = await Toolset.sync(url, "billing", cache="/var/cache/billing.toolset.json",
                                 token=token)
    watcher = toolset.watch(on_change)     # a started ToolsetWatcher
    gate = Gate(watcher.current)           # .current: the latest good snapshot
    ...
    await watcher.stop()

Names:

* `Toolset.sync(url, namespace, *, cache=None, token=None, timeout=10.0, retries=3,
  client=None, backoff=None)` (classmethod, delegates to `sync_toolset`): one boot
  sync. `GET {url}/v1/namespaces/{ns}/toolset`; the body must load with
  `Toolset.from_json` (digest-checked), be the namespace asked for, and the
  `ETag` header must be the payload digest in double quotes (`W/` tolerated).
  Anything else is an invalid answer, retried like an outage.
* `Toolset.watch(on_change=None, *, url=None, ...)`: builds and starts a
  `ToolsetWatcher`. URL, namespace, token and cache default to those of the
  `Toolset.sync` that produced the toolset; a toolset loaded otherwise needs `url=`.
* `ToolsetWatcher(url, namespace, toolset, *, on_change=None, token=None, cache=None,
  wait=30, ...)`: `.current` is the latest good `Toolset` (a plain reference
  swap: whoever read `.current` before a swap keeps the snapshot it got);
  `.wait_seconds` is the long-poll interval (MCP adapters derive `ttlMs` from
  it); `start()`, `await stop()`, `await run()`, `async with watcher:`.
* `SyncError` (a `ToolsetError`): boot sync failed and no usable cache; its
  message names the registry URL, the cause and why the cache was not used.
* `Backoff(base, cap, retry_after_cap)`: exponential backoff with full jitter,
  injectable (tests pass tiny values).
* `read_cache(path) -> CachedToolset`, `write_cache(path, toolset, ...)`: the
  cache file (below).

Retries (boot sync): connection errors, timeouts, an invalid answer (garbage,
truncated body, wrong ETag), HTTP 429 and 5xx are retried `retries` times
(`retries + 1` attempts in all), waiting `Backoff.delay` between attempts: a
uniform random delay in [0, min(cap, base * 2**attempt)], but never less than
the server's `Retry-After` capped at `retry_after_cap`. Other 4xx answers
(401, 403, 404, ...) are configuration errors: `SyncError` at once, with the
problem detail's text, no retry and no cache fallback. Every attempt, body
included, is bounded by `timeout` seconds, so a boot sync takes at most
`(retries + 1) * timeout + retries * max(cap, retry_after_cap)` seconds
(defaults: 4 * 10 + 3 * 10 s).

When every attempt fails, the cache is loaded if its digest checks out and the
SDK logs, at error level (event `toolset.sync.from_cache`), that it runs from
cache, with the registry URL, the cause and the time the cached toolset was
fetched (`fetched_at`, `age_seconds`). When a usable cache exists at boot, the
request carries its ETag in `If-None-Match`; a 304 confirms it.

The watcher long-polls `GET ...toolset?wait=S` with `If-None-Match: <etag>`
(each poll bounded by `wait + timeout` seconds; a 304 that comes back sooner
than `min_interval` is followed by a pause, so a registry or proxy that does
not hold the request never makes it spin).
On 200 it verifies the answer like a boot sync, swaps `.current`, writes the
cache and calls every change callback (plain or async; a callback that raises
is logged, never stops the watcher). On 304 it polls again. On any failure
(registry down, 5xx, 4xx, garbage, truncated body, wrong ETag) it keeps the
last good toolset, logs the reason (`toolset.watch.failed`), backs off with
jitter (`Backoff`, default cap 30 s) and retries until stopped, so it
survives registry restarts (`toolset.watch.recovered` once it is back).

Cache file: one JSON object, written atomically (temp file in the same
directory, fsync, `os.replace`, fsync of the directory), mode 0600:

    {"format": "mcp-tool-registry/toolset-cache@1", "url": "...",
     "namespace": "billing", "digest": "sha256:...",
     "fetchedAt": "2026-01-01T00:00:00Z", "payload": <the payload bytes as served>}

`payload` is spliced in byte for byte and read back as raw bytes, so it is
exactly what the registry served; loading it checks its digest and that it
matches `digest`. `fetchedAt` is when that content was last fetched or
confirmed (304) by a boot sync, or fetched by the watcher. A cache write that
fails is logged (`toolset.cache.write_failed`) and does not fail the sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias
from urllib.parse import quote

import msgspec

from registry.sdk._logging import get_logger
from registry.sdk.toolset import Toolset, ToolsetError

if TYPE_CHECKING:
    from collections.abc import Iterable

    import httpx

__all__ = [
    "BOOT_BACKOFF",
    "CACHE_FORMAT",
    "WATCH_BACKOFF",
    "Backoff",
    "CachedToolset",
    "OnChange",
    "SyncError",
    "SyncSource",
    "ToolsetWatcher",
    "read_cache",
    "sync_toolset",
    "toolset_url",
    "watch_toolset",
    "write_cache",
]

CACHE_FORMAT = "mcp-tool-registry/toolset-cache@1"
MAX_WAIT = 60
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
_MAX_ERROR_BYTES = 64 * 1024
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
_USER_AGENT = "mcp-tool-registry-sdk"

_log = get_logger("registry.sdk.sync")
_random = random.Random()

OnChange: TypeAlias = Callable[[Toolset], Awaitable[None] | None]
CachePath: TypeAlias = str | os.PathLike[str]


class SyncError(ToolsetError):
    """Boot sync failed: the registry refused the request (401, 403, 404, other
    4xx) or could not be reached / gave no valid answer, and no usable cache
    was there. The message names the registry URL, the cause and, when a cache
    path was given, why it was not used."""

    def __init__(
        self,
        message: str,
        *,
        url: str,
        namespace: str,
        cause: str,
        status: int | None = None,
        cache_problem: str | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.namespace = namespace
        self.cause = cause
        self.status = status
        self.cache_problem = cache_problem


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter.

    `delay(attempt)` (attempt 0 = the wait after the first failure) is uniform in
    [0, min(cap, base * 2**attempt)]; a server's `Retry-After` raises it to
    `min(retry_after, retry_after_cap)`."""

    base: float = 0.5
    cap: float = 5.0
    retry_after_cap: float = 10.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        ceiling = min(self.cap, self.base * 2 ** min(attempt, 62))
        value = _random.uniform(0.0, ceiling)
        if retry_after is not None:
            value = max(value, min(retry_after, self.retry_after_cap))
        return value

    @property
    def max_delay(self) -> float:
        return max(self.cap, self.retry_after_cap)


BOOT_BACKOFF = Backoff(base=0.5, cap=5.0, retry_after_cap=10.0)
WATCH_BACKOFF = Backoff(base=1.0, cap=30.0, retry_after_cap=60.0)


@dataclass(frozen=True)
class SyncSource:
    """Where a synced toolset came from; `Toolset.watch` defaults to it."""

    url: str
    namespace: str
    token: str | None = field(default=None, repr=False)
    cache: Path | None = None
    timeout: float = 10.0
    fetched_at: datetime | None = None
    from_cache: bool = False


@dataclass(frozen=True)
class CachedToolset:
    """A verified cache file: the toolset, when it was fetched, and from where."""

    toolset: Toolset
    fetched_at: datetime
    url: str | None
    namespace: str
    path: Path


class _Envelope(msgspec.Struct, frozen=True):
    format: str
    digest: str
    fetched_at: str = msgspec.field(name="fetchedAt")
    payload: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    namespace: str | None = None
    url: str | None = None


def toolset_url(url: str, namespace: str) -> str:
    """`{url}/v1/namespaces/{namespace}/toolset` (`url` is the registry's base URL)."""
    return f"{url.rstrip('/')}/v1/namespaces/{quote(namespace, safe='')}/toolset"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _age(moment: datetime) -> str:
    seconds = max(0, int((_utcnow() - moment).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


# ------------------------------------------------------------------------ the cache


def read_cache(path: CachePath, *, toolset_class: type[Toolset] = Toolset) -> CachedToolset:
    """Load and verify a cache file; `FileNotFoundError` if absent, `ToolsetError`
    if unreadable, not a cache file, or its payload fails the digest check."""
    where = Path(path)
    data = where.read_bytes()
    try:
        envelope = msgspec.json.decode(data, type=_Envelope)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ToolsetError(f"not a toolset cache file: {exc}") from exc
    if envelope.format != CACHE_FORMAT:
        raise ToolsetError(f"unknown cache format {envelope.format!r}, expected {CACHE_FORMAT!r}")
    if not bytes(envelope.payload):
        raise ToolsetError("the cache file holds no payload")
    try:
        fetched_at = datetime.fromisoformat(envelope.fetched_at)
    except ValueError as exc:
        raise ToolsetError(f"bad fetchedAt {envelope.fetched_at!r} in the cache file") from exc
    if fetched_at.tzinfo is None:
        fetched_at = fetched_at.replace(tzinfo=UTC)
    toolset = toolset_class.from_json(bytes(envelope.payload))
    if toolset.digest != envelope.digest:
        raise ToolsetError(
            f"the cache file records digest {envelope.digest!r} but holds payload "
            f"{toolset.digest!r}"
        )
    return CachedToolset(
        toolset=toolset,
        fetched_at=fetched_at,
        url=envelope.url,
        namespace=toolset.namespace,
        path=where,
    )


def write_cache(
    path: CachePath,
    toolset: Toolset,
    *,
    url: str | None = None,
    fetched_at: datetime | None = None,
) -> None:
    """Write the cache file atomically: a temp file in the same directory,
    fsync, `os.replace`, then fsync of the directory (best effort)."""
    where = Path(path)
    header = msgspec.json.encode(
        {
            "format": CACHE_FORMAT,
            "url": url,
            "namespace": toolset.namespace,
            "digest": toolset.digest,
            "fetchedAt": _rfc3339(fetched_at or _utcnow()),
        }
    )
    data = header[:-1] + b',"payload":' + toolset.to_json().strip() + b"}\n"
    directory = where.parent
    directory.mkdir(parents=True, exist_ok=True)
    import tempfile

    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{where.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, where)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError, AttributeError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


async def _write_cache_logged(
    path: Path, toolset: Toolset, url: str, fetched_at: datetime, *, during: str
) -> None:
    try:
        await asyncio.to_thread(write_cache, path, toolset, url=url, fetched_at=fetched_at)
    except OSError as exc:
        _log.error(
            "toolset.cache.write_failed",
            message=f"could not write the toolset cache {path}: {exc}",
            cache=str(path),
            digest=toolset.digest,
            during=during,
            error=str(exc),
        )


# ---------------------------------------------------------------- one HTTP exchange


class _Failure(Exception):
    """One failed attempt: `cause` says why, in words fit for a log or an error."""

    def __init__(
        self,
        cause: str,
        *,
        retryable: bool = True,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(cause)
        self.cause = cause
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


_NOT_MODIFIED = object()


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        from email.utils import parsedate_to_datetime  # only a Retry-After date needs it

        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - _utcnow()).total_seconds())


def _etag_digest(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    value = value.removeprefix("W/")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return None


def _problem_text(status: int, reason: str, body: bytes) -> str:
    text = f"HTTP {status} {reason}".rstrip()
    try:
        problem = msgspec.json.decode(body) if body else None
    except msgspec.DecodeError:
        problem = None
    if isinstance(problem, dict):
        title = problem.get("title")
        detail = problem.get("detail")
        parts = [str(p) for p in (title, detail) if isinstance(p, str) and p]
        if parts:
            return f"{text}: {': '.join(parts)}"
    snippet = body[:200].decode("utf-8", "replace").strip()
    return f"{text}: {snippet}" if snippet else text


async def _read_capped(response: httpx.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _Failure(f"the answer is larger than {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def _fetch(
    client: httpx.AsyncClient,
    endpoint: str,
    namespace: str,
    *,
    token: str | None,
    etag: str | None,
    wait: int | None,
    timeout: float,
    toolset_class: type[Toolset],
) -> Toolset | object:
    """One GET of the toolset: a verified `Toolset`, `_NOT_MODIFIED`, or `_Failure`."""
    import httpx  # loaded with the first fetch: a server started from its cache never needs it

    headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if etag is not None:
        headers["If-None-Match"] = etag
    params = {"wait": str(wait)} if wait else None
    budget = timeout + (wait or 0)
    request_timeout = httpx.Timeout(timeout, read=budget)
    try:
        async with asyncio.timeout(budget):
            async with client.stream(
                "GET", endpoint, params=params, headers=headers, timeout=request_timeout
            ) as response:
                status = response.status_code
                if status == 304:
                    if etag is None:
                        raise _Failure("HTTP 304 Not Modified to a request without If-None-Match")
                    return _NOT_MODIFIED
                if status != 200:
                    body = await _read_capped(response, _MAX_ERROR_BYTES)
                    text = _problem_text(status, response.reason_phrase, body)
                    if status == 429 or status >= 500:
                        after = _retry_after(response.headers.get("Retry-After"))
                        raise _Failure(text, status=status, retry_after=after)
                    raise _Failure(text, status=status, retryable=not 400 <= status < 500)
                body = await _read_capped(response, MAX_PAYLOAD_BYTES)
                etag_header = response.headers.get("ETag")
    except TimeoutError:
        raise _Failure(f"no complete answer within {budget:g} s") from None
    except httpx.HTTPError as exc:
        detail = str(exc) or type(exc).__name__
        raise _Failure(f"{type(exc).__name__}: {detail}") from None
    try:
        toolset = toolset_class.from_json(body)
    except ToolsetError as exc:
        raise _Failure(f"invalid toolset payload ({len(body)} bytes): {exc}") from None
    if toolset.namespace != namespace:
        raise _Failure(
            f"the registry answered the toolset of namespace {toolset.namespace!r}, "
            f"not {namespace!r}"
        )
    tagged = _etag_digest(etag_header)
    if tagged != toolset.digest:
        raise _Failure(
            f"the ETag header {etag_header!r} does not name the payload digest {toolset.digest!r}"
        )
    return toolset


def _client(timeout: float) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(timeout=timeout, follow_redirects=True)


def _check_namespace(namespace: str) -> None:
    if not _NAMESPACE.fullmatch(namespace):
        raise ValueError(f"invalid namespace {namespace!r}: must match {_NAMESPACE.pattern}")


# ------------------------------------------------------------------------ boot sync


async def sync_toolset(
    url: str,
    namespace: str,
    *,
    cache: CachePath | None = None,
    token: str | None = None,
    timeout: float = 10.0,
    retries: int = 3,
    client: httpx.AsyncClient | None = None,
    backoff: Backoff | None = None,
    toolset_class: type[Toolset] = Toolset,
) -> Toolset:
    """The body of `Toolset.sync`: see the module docstring."""
    _check_namespace(namespace)
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if retries < 0:
        raise ValueError("retries must be >= 0")
    backoff = backoff or BOOT_BACKOFF
    endpoint = toolset_url(url, namespace)
    cache_path = Path(cache) if cache is not None else None

    cached: CachedToolset | None = None
    cache_problem: str | None = None
    if cache_path is not None:
        try:
            cached = await asyncio.to_thread(read_cache, cache_path, toolset_class=toolset_class)
        except FileNotFoundError:
            cache_problem = f"no cache file at {cache_path}"
        except (OSError, ToolsetError) as exc:
            cache_problem = f"the cache file {cache_path} is unusable: {exc}"
        else:
            if cached.namespace != namespace:
                cache_problem = (
                    f"the cache file {cache_path} holds namespace {cached.namespace!r}, "
                    f"not {namespace!r}"
                )
                cached = None

    def source(fetched_at: datetime, from_cache: bool) -> SyncSource:
        return SyncSource(url, namespace, token, cache_path, timeout, fetched_at, from_cache)

    owned = client is None
    http = client if client is not None else _client(timeout)
    failure: _Failure | None = None
    try:
        attempts = retries + 1
        for attempt in range(attempts):
            try:
                result = await _fetch(
                    http,
                    endpoint,
                    namespace,
                    token=token,
                    etag=cached.toolset.etag if cached else None,
                    wait=None,
                    timeout=timeout,
                    toolset_class=toolset_class,
                )
            except _Failure as exc:
                failure = exc
                if not exc.retryable:
                    break
                if attempt + 1 < attempts:
                    delay = backoff.delay(attempt, exc.retry_after)
                    _log.warning(
                        "toolset.sync.retry",
                        url=url,
                        namespace=namespace,
                        attempt=attempt + 1,
                        attempts=attempts,
                        cause=exc.cause,
                        delay=round(delay, 3),
                    )
                    await asyncio.sleep(delay)
                continue
            now = _utcnow()
            if result is _NOT_MODIFIED:
                assert cached is not None
                toolset = cached.toolset
            else:
                assert isinstance(result, Toolset)
                toolset = result
            if cache_path is not None:
                await _write_cache_logged(cache_path, toolset, url, now, during="sync")
            _log.info(
                "toolset.sync.ok",
                url=url,
                namespace=namespace,
                digest=toolset.digest,
                not_modified=result is _NOT_MODIFIED,
                attempts=attempt + 1,
            )
            toolset._origin = source(now, False)
            return toolset
    finally:
        if owned:
            await http.aclose()

    assert failure is not None
    if not failure.retryable:
        raise SyncError(
            f"registry {url} refused the toolset of namespace {namespace!r}: {failure.cause}",
            url=url,
            namespace=namespace,
            cause=failure.cause,
            status=failure.status,
        )
    if cached is not None:
        _log.error(
            "toolset.sync.from_cache",
            message=(
                f"RUNNING FROM CACHE: registry {url} gave no valid toolset for namespace "
                f"{namespace!r} after {retries + 1} attempts ({failure.cause}); serving the "
                f"cached toolset {cached.toolset.digest} fetched at "
                f"{_rfc3339(cached.fetched_at)} ({_age(cached.fetched_at)} ago) from "
                f"{cached.path}"
            ),
            url=url,
            namespace=namespace,
            cause=failure.cause,
            fetched_at=_rfc3339(cached.fetched_at),
            age_seconds=int((_utcnow() - cached.fetched_at).total_seconds()),
            cache=str(cached.path),
            digest=cached.toolset.digest,
        )
        cached.toolset._origin = source(cached.fetched_at, True)
        return cached.toolset
    message = (
        f"cannot sync the toolset of namespace {namespace!r} from registry {url} "
        f"after {retries + 1} attempts: {failure.cause}"
    )
    if cache_problem is not None:
        message += f"; {cache_problem}"
    else:
        message += "; no cache configured (pass cache=PATH to boot from the last good toolset)"
    raise SyncError(
        message,
        url=url,
        namespace=namespace,
        cause=failure.cause,
        status=failure.status,
        cache_problem=cache_problem,
    )


# ------------------------------------------------------------------------- watching


class ToolsetWatcher:
    """Keeps a toolset current by long-polling the registry; see the module docstring.

    `.current` is the latest good snapshot. Read it once per call and use that
    object for the whole call: a swap never changes a snapshot already handed out.
    """

    def __init__(
        self,
        url: str,
        namespace: str,
        toolset: Toolset,
        *,
        on_change: OnChange | None = None,
        token: str | None = None,
        cache: CachePath | None = None,
        wait: int = 30,
        timeout: float = 10.0,
        client: httpx.AsyncClient | None = None,
        backoff: Backoff | None = None,
        min_interval: float = 1.0,
    ) -> None:
        _check_namespace(namespace)
        if toolset.namespace != namespace:
            raise ValueError(
                f"the toolset is of namespace {toolset.namespace!r}, not {namespace!r}"
            )
        if isinstance(wait, bool) or not isinstance(wait, int) or not 1 <= wait <= MAX_WAIT:
            raise ValueError(f"wait must be a whole number of seconds in 1..{MAX_WAIT}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.url = url
        self.namespace = namespace
        self.endpoint = toolset_url(url, namespace)
        self.wait_seconds = wait
        self.timeout = timeout
        self.backoff = backoff or WATCH_BACKOFF
        self.min_interval = min_interval
        self.cache = Path(cache) if cache is not None else None
        self._token = token
        self._current = toolset
        self._client = client
        self._owns_client = client is None
        self._callbacks: list[OnChange] = [on_change] if on_change is not None else []
        self._task: asyncio.Task[None] | None = None
        self.last_error: str | None = None
        self.last_ok_at: datetime | None = None
        self.changed_at: datetime | None = None
        self.failures = 0

    @property
    def current(self) -> Toolset:
        """The latest good toolset (an immutable snapshot)."""
        return self._current

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def subscribe(self, callback: OnChange) -> Callable[[], None]:
        """Add a change callback; returns a function that removes it."""
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._callbacks.remove(callback)

        return unsubscribe

    def start(self) -> ToolsetWatcher:
        """Run the watch loop as a background task of the running event loop."""
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(
                self.run(), name=f"toolset-watch:{self.namespace}"
            )
        return self

    async def stop(self) -> None:
        """Stop the loop (an in-flight poll is cancelled) and close an owned client."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    async def __aenter__(self) -> ToolsetWatcher:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def run(self) -> None:
        """The watch loop; returns only by cancellation (`stop()`)."""
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                changed = await self.poll()
            except asyncio.CancelledError:
                raise
            except _Failure as exc:
                await self._failed(exc.cause, exc.retry_after, status=exc.status)
                continue
            except Exception as exc:  # keep watching whatever happens
                await self._failed(f"{type(exc).__name__}: {exc}", None, status=None)
                continue
            if not changed:
                # a 304 long before `wait` ran out: a registry or proxy not holding
                # the request; never spin
                rest = self.min_interval - (loop.time() - started)
                if rest > 0:
                    await asyncio.sleep(rest)

    async def poll(self) -> bool:
        """One long-poll; True when the toolset changed. Raises on a failure."""
        if self._client is None:
            self._client = _client(self.timeout)
        toolset = self._current
        result = await _fetch(
            self._client,
            self.endpoint,
            self.namespace,
            token=self._token,
            etag=toolset.etag,
            wait=self.wait_seconds,
            timeout=self.timeout,
            toolset_class=type(toolset),
        )
        now = _utcnow()
        self._recovered(now)
        if result is _NOT_MODIFIED:
            return False
        assert isinstance(result, Toolset)
        if result.digest == toolset.digest:
            return False
        result._origin = SyncSource(
            self.url, self.namespace, self._token, self.cache, self.timeout, now, False
        )
        self._current = result
        self.changed_at = now
        _log.info(
            "toolset.watch.changed",
            url=self.url,
            namespace=self.namespace,
            digest=result.digest,
            previous=toolset.digest,
        )
        if self.cache is not None:
            await _write_cache_logged(self.cache, result, self.url, now, during="watch")
        await self._notify(result, list(self._callbacks))
        return True

    def _recovered(self, now: datetime) -> None:
        if self.failures:
            _log.info(
                "toolset.watch.recovered",
                url=self.url,
                namespace=self.namespace,
                failures=self.failures,
                digest=self._current.digest,
            )
        self.failures = 0
        self.last_error = None
        self.last_ok_at = now

    async def _failed(self, cause: str, retry_after: float | None, *, status: int | None) -> None:
        self.failures += 1
        self.last_error = cause
        delay = self.backoff.delay(self.failures - 1, retry_after)
        log = _log.error if status is not None and 400 <= status < 500 else _log.warning
        log(
            "toolset.watch.failed",
            message=(
                f"toolset watch on registry {self.url} failed ({cause}); keeping toolset "
                f"{self._current.digest}, retrying in {delay:.2f} s"
            ),
            url=self.url,
            namespace=self.namespace,
            cause=cause,
            status=status,
            failures=self.failures,
            digest=self._current.digest,
            delay=round(delay, 3),
        )
        await asyncio.sleep(delay)

    async def _notify(self, toolset: Toolset, callbacks: Iterable[OnChange]) -> None:
        for callback in callbacks:
            try:
                result = callback(toolset)
                if inspect.isawaitable(result):
                    await result
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception(
                    "toolset.watch.callback_failed",
                    namespace=self.namespace,
                    digest=toolset.digest,
                    callback=getattr(callback, "__qualname__", repr(callback)),
                )

    def __repr__(self) -> str:
        return (
            f"ToolsetWatcher(url={self.url!r}, namespace={self.namespace!r}, "
            f"digest={self._current.digest!r}, wait_seconds={self.wait_seconds}, "
            f"running={self.running})"
        )


def watch_toolset(
    toolset: Toolset,
    on_change: OnChange | None = None,
    *,
    url: str | None = None,
    token: str | None = None,
    cache: CachePath | None = None,
    wait: int = 30,
    timeout: float | None = None,
    client: httpx.AsyncClient | None = None,
    backoff: Backoff | None = None,
    min_interval: float = 1.0,
) -> ToolsetWatcher:
    """The body of `Toolset.watch`: a started `ToolsetWatcher`."""
    origin: SyncSource | None = toolset._origin
    if url is None:
        if origin is None:
            raise ValueError(
                "this toolset did not come from Toolset.sync: pass url= (the registry URL)"
            )
        url = origin.url
    if origin is not None and origin.url == url:
        token = token if token is not None else origin.token
        cache = cache if cache is not None else origin.cache
        timeout = timeout if timeout is not None else origin.timeout
    watcher = ToolsetWatcher(
        url,
        toolset.namespace,
        toolset,
        on_change=on_change,
        token=token,
        cache=cache,
        wait=wait,
        timeout=timeout if timeout is not None else 10.0,
        client=client,
        backoff=backoff,
        min_interval=min_interval,
    )
    return watcher.start()
