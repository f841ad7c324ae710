"""Usage counts: which versions callers still speak, counted where the gate decides.

    reporter = UsageReporter(url, "billing", server="billing-gated@host-1",
                             source=watcher, token=TOKEN, interval=10.0)
    gate_server(server, watcher, handlers=HANDLERS, on_decision=reporter.record)
    reporter.start()          # on the running event loop
    ...
    await reporter.stop()     # one last flush

`UsageCounter.record` is a `Gate` `on_decision` hook. It adds one to a count
keyed by (tool, version, decision, reason) in a plain dict and returns: no
lock, no I/O, no clock, no log line. The version is the one the call declared
(an alias call: its contract), or for a version-less call the current version
when it was accepted and the gate's `inferredVersion` when it was refused
(None when no version matched). The decision is `accepted` (the declared or
current contract, as sent), `converted` (an older contract converted to
current) or `refused`, with the gate's `reason`. Calls naming no tool or alias
of the toolset are not counted: their names come from the caller and speak no
version. Never an argument value: only these four fields and a number.

The counter is bounded (`max_keys` distinct keys, default 10,000; keys are
bounded by tools x versions x decisions, except versions a caller makes up):
a call with a new key past the bound is counted in `dropped`, reported too.

`UsageReporter` flushes the counter every `interval` seconds in a background
task: it swaps the counter's dict for an empty one (one reference exchange)
and POSTs the batch to `{url}/v1/namespaces/{ns}/usage` with the server's
identity (`server`, a name the server sets, and `toolset`, the digest of the
toolset it serves at the flush). A call never waits for a report.

What a failed report loses, each said in the log (logger `registry.sdk.usage`):

* the registry down, or answering 429/5xx (`usage.report.failed`, WARNING
  once per outage, then INFO): nothing; the batch is merged back into the
  counter and sent with the next one (the counter's bound still applies);
* the fate of the report unknown (a timeout or a connection lost after the
  request was sent: the registry may have stored it): that batch, one
  interval's counts, dropped rather than counted twice (`usage.report.lost`);
* the registry refusing the report (401, 403, 404, 422): that batch
  (`usage.report.refused`, ERROR): a configuration error another try will not mend.

`usage.report.recovered` (WARNING) says when reports land again after
failures. A record made from another thread while a flush swaps the dict may
land in the batch being sent or in the next one; none is counted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, TypeAlias
from urllib.parse import quote

import httpx
import msgspec

from registry.sdk._logging import get_logger
from registry.sdk.gate import Decision, Declared
from registry.sdk.toolset import Toolset

__all__ = [
    "MAX_COUNTS",
    "MAX_KEYS",
    "UsageCount",
    "UsageCounter",
    "UsageReport",
    "UsageReporter",
    "usage_url",
]

_log = get_logger("registry.sdk.usage")

MAX_KEYS: Final = 10_000
"""Default bound of the counter's distinct keys."""
MAX_COUNTS: Final = 10_000
"""The most entries one report may carry (the registry refuses more)."""


Outcome: TypeAlias = Literal["accepted", "converted", "refused"]
Key: TypeAlias = tuple[str, "int | None", Outcome, "str | None"]

ToolName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9._-]{1,128}$")]
ServerName = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}$",
        description="the reporting server's name, as it sets it (host, pod, service)",
    ),
]
Digest = Annotated[str, msgspec.Meta(pattern=r"^sha256:[0-9a-f]{64}$")]
Reason = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z_]{0,63}$")]
Calls = Annotated[int, msgspec.Meta(ge=1, le=2**53)]
Dropped = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
WireVersion = Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]


class UsageCount(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """Calls of one (tool, version, decision, reason) since the last report."""

    tool: ToolName
    version: WireVersion | None
    decision: Outcome
    calls: Calls
    reason: Reason | None = None  # set on refusals only: the gate's `data.reason`


class UsageReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The body of `POST /v1/namespaces/{ns}/usage`: counts, never argument values."""

    server: ServerName
    toolset: Digest  # the digest of the toolset the server serves
    counts: Annotated[list[UsageCount], msgspec.Meta(max_length=MAX_COUNTS)]
    dropped: Dropped = 0  # calls not counted: the counter was full


def _wire_version(value: Any) -> int | None:
    """`inferredVersion` as the gate writes it ("v3") back to a number."""
    if isinstance(value, str) and value.startswith("v") and value[1:].isdigit():
        return int(value[1:])
    return None


class UsageCounter:
    """A bounded in-memory count of gate decisions; `record` is the `on_decision` hook."""

    __slots__ = ("_counts", "_dropped", "_max_keys")

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self._max_keys = max_keys
        self._counts: dict[Key, int] = {}
        self._dropped = 0

    def record(self, decision: Decision, declared: Declared) -> None:
        """Count one decision (see the module docstring for the key)."""
        if decision.accepted:  # the hot path: literals, no global lookups
            version = declared.version
            current = decision.version
            if version is None or version == current:
                key: Key = (decision.tool, current, "accepted", None)
            else:
                key = (decision.tool, version, "converted", None)
        else:
            error = decision.error
            if error is None or decision.version is None:
                return  # no tool of the toolset: nothing a version can be told of
            data = error.data
            reason = data.get("reason")
            if reason == "schema_version_unknown":
                version = None  # a version never served: none the registry could be told of
            elif declared.present:
                version = declared.version
            else:
                version = _wire_version(data.get("inferredVersion"))
            key = (decision.tool, version, "refused", reason if isinstance(reason, str) else None)
        counts = self._counts
        try:
            counts[key] += 1
        except KeyError:
            if len(counts) < self._max_keys:
                counts[key] = 1
            else:
                self._dropped += 1

    def take(self) -> tuple[dict[Key, int], int]:
        """The counts and the dropped calls so far; the counter starts again from zero."""
        counts, self._counts = self._counts, {}
        dropped, self._dropped = self._dropped, 0
        return counts, dropped

    def give_back(self, counts: dict[Key, int], dropped: int) -> None:
        """Merge counts that could not be reported into the counter (its bound applies)."""
        mine = self._counts
        for key, calls in counts.items():
            seen = mine.get(key)
            if seen is not None:
                mine[key] = seen + calls
            elif len(mine) < self._max_keys:
                mine[key] = calls
            else:
                dropped += calls
        self._dropped += dropped

    @property
    def pending(self) -> int:
        """Calls counted and not yet taken (dropped ones included)."""
        return sum(self._counts.values()) + self._dropped


def report_of(server: str, toolset: str, counts: dict[Key, int], dropped: int) -> UsageReport:
    """The wire report of a batch (sorted, so equal batches encode alike)."""
    entries = [
        UsageCount(tool=tool, version=version, decision=outcome, calls=calls, reason=reason)
        for (tool, version, outcome, reason), calls in sorted(counts.items(), key=_order)
    ]
    return UsageReport(server=server, toolset=toolset, counts=entries, dropped=dropped)


def _order(item: tuple[Key, int]) -> tuple[str, int, str, str]:
    (tool, version, outcome, reason), _ = item
    return tool, version or 0, outcome, reason or ""


def usage_url(url: str, namespace: str) -> str:
    """`{url}/v1/namespaces/{namespace}/usage` (`url` is the registry's base URL)."""
    return f"{url.rstrip('/')}/v1/namespaces/{quote(namespace, safe='')}/usage"


_RETRIED: Final = frozenset({408, 425, 429, 500, 502, 503, 504})

ToolsetDigest: TypeAlias = "Toolset | Callable[[], str] | Any"


class UsageReporter:
    """Counts gate decisions and reports them to the registry in the background.

    `source` tells the digest of the toolset the server serves: a `Toolset`, a
    source with a `.current` Toolset (the sync watcher), or a function
    answering the digest. `interval` is in seconds (> 0); `timeout` bounds one
    report. `record` is the counter's hook, for `on_decision=`.
    """

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        server: str,
        source: ToolsetDigest,
        token: str | None = None,
        interval: float = 10.0,
        timeout: float = 5.0,
        max_keys: int = MAX_KEYS,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if not interval > 0:
            raise ValueError("interval must be a positive number of seconds")
        if not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")
        msgspec.convert(server, ServerName)  # ValidationError: the registry would refuse it
        self.url = usage_url(url, namespace)
        self.namespace = namespace
        self.server = server
        self.interval = interval
        self._source = source
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._client = client
        self._owns_client = client is None
        self.counter = UsageCounter(max_keys)
        self.record = self.counter.record
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        self.sent = 0  # reports the registry took
        self.lost_calls = 0  # calls given up on (unknown fate or refused reports)

    def _digest(self) -> str:
        source = self._source
        if isinstance(source, Toolset):
            return source.digest
        current = getattr(source, "current", None)
        if isinstance(current, Toolset):
            return current.digest
        if callable(source):
            return str(source())
        raise TypeError("source must be a Toolset, have a .current Toolset, or answer a digest")

    # ------------------------------------------------------------ background

    def start(self) -> UsageReporter:
        """Start flushing every `interval` seconds on the running loop."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.flush()
            except Exception:  # never let the reporter die on a bug: say it and go on
                _log.exception("usage.report.crashed", url=self.url)

    async def stop(self, *, flush: bool = True, timeout: float | None = None) -> None:
        """Stop the background task; with `flush`, report what is left, waiting at most
        `timeout` seconds (default: the reporter's)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if flush:
            await self.flush(timeout=timeout)
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> UsageReporter:
        return self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # ------------------------------------------------------------ one report

    async def flush(self, *, timeout: float | None = None) -> bool:
        """Report the counts gathered since the last report; True when the registry took
        them (or there was nothing to report). Never raises for a failed report."""
        counts, dropped = self.counter.take()
        if not counts and not dropped:
            return True
        calls = sum(counts.values())
        try:
            body = msgspec.json.encode(report_of(self.server, self._digest(), counts, dropped))
        except Exception:
            _log.exception("usage.report.lost", url=self.url, calls=calls, reason="encoding")
            self.lost_calls += calls
            return False
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self._timeout)
        try:
            response = await self._client.post(
                self.url,
                content=body,
                headers={**self._headers, "Content-Type": "application/json"},
                timeout=timeout if timeout is not None else self._timeout,
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            return self._keep(counts, dropped, f"{type(exc).__name__}: {exc}")
        except (httpx.HTTPError, OSError) as exc:
            # the request may have reached the registry: counting it again could double it
            return self._lose(
                calls,
                "usage.report.lost",
                f"a report of {calls} calls may or may not have been stored "
                f"({type(exc).__name__}: {exc}); it is dropped rather than counted twice",
            )
        if response.status_code in _RETRIED:
            return self._keep(counts, dropped, f"HTTP {response.status_code}")
        if response.status_code not in (200, 201):
            return self._lose(
                calls,
                "usage.report.refused",
                f"the registry refused a report of {calls} calls: "
                f"HTTP {response.status_code}: {_detail(response)}",
                status=response.status_code,
            )
        self.sent += 1
        if self._failing:
            self._failing = False
            _log.warning("usage.report.recovered", url=self.url, lost_calls=self.lost_calls)
        return True

    def _lose(self, calls: int, event: str, message: str, **fields: Any) -> bool:
        """A batch given up on: counted in `lost_calls` and said in the log."""
        self.lost_calls += calls
        self._failing = True
        log = _log.error if event == "usage.report.refused" else _log.warning
        log(event, message=message, url=self.url, calls=calls, **fields)
        return False

    def _keep(self, counts: dict[Key, int], dropped: int, cause: str) -> bool:
        """The registry did not take the batch: keep it for the next report."""
        calls = sum(counts.values())
        self.counter.give_back(counts, dropped)
        level = _log.info if self._failing else _log.warning
        self._failing = True
        level(
            "usage.report.failed",
            message=f"usage not reported ({cause}); {calls} calls kept for the next report",
            url=self.url,
            calls=calls,
        )
        return False


def _detail(response: httpx.Response) -> str:
    try:
        problem = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        return response.text[:300]
    if isinstance(problem, dict) and isinstance(problem.get("detail"), str):
        return str(problem["detail"])
    return response.text[:300]
