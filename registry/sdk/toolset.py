"""The toolset snapshot an MCP server gates its calls with.

    toolset = Toolset.from_json(body)     # digest-checked, ToolsetError otherwise
    toolset.digest                         # "sha256:..." (the HTTP ETag, unquoted)
    toolset.tool("db.query").current       # 4
    toolset.alias("search_v1").target      # "search"
    toolset = await Toolset.sync(url, "billing", cache=path)   # boot sync (registry.sdk.sync)
    watcher = toolset.watch(on_change)     # a started ToolsetWatcher; watcher.current

The payload is the answer of `GET /v1/namespaces/{ns}/toolset`; its schema is
`schemas/toolset.schema.json`. A `Toolset` is an immutable snapshot: a toolset
swap replaces the whole object, it never changes one in place.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from registry.canonical import DigestError, canonical_json, digest_of_canonical, parse_json
from registry.compat.converters import ConverterError, Op, Rename, parse_pointer
from registry.compat.kinds import Severity
from registry.sdk._verify import Checked, definitions, digests_from_bytes, verify_payload

if TYPE_CHECKING:
    import os

    import httpx

    from registry.compat import ChangeReport
    from registry.sdk.sync import Backoff, OnChange, SyncSource, ToolsetWatcher

__all__ = [
    "AliasContract",
    "AliasEntry",
    "ContractChange",
    "RetiredVersion",
    "RouteStep",
    "ToolEntry",
    "Toolset",
    "ToolsetError",
    "ToolsetPayload",
    "VersionEntry",
    "contract_changes",
    "payload_digest",
]

_INPUT = "/inputSchema"


# The payload's Structs are not tracked by the cycle collector (`gc=False`): they
# only ever hold JSON data, which cannot refer back to them, and a 10,000-tool
# payload has tens of thousands of them for every collection to scan.


class ToolsetError(ValueError):
    """A toolset payload that cannot be trusted: unreadable, digest mismatch,
    or inconsistent (a route that does not lead to current, ...)."""


class RouteStep(msgspec.Struct, frozen=True, forbid_unknown_fields=False, gc=False):
    """One step of a route: an additive identity step (`ops == ()`) or a
    registered, verified converter from version `from` to version `to`.
    `accepted`: an identity step whose breaking changes the publisher accepted
    on purpose (arguments go on unconverted; what `to` refuses is refused)."""

    from_: int = msgspec.field(name="from")
    to: int
    ops: tuple[Op, ...] = ()
    accepted: bool = False

    def __post_init__(self) -> None:
        for op in self.ops:
            for pointer in (op.from_, op.to) if isinstance(op, Rename) else (op.path,):
                parse_pointer(pointer)  # ConverterError is a ValueError: msgspec reports it


class ContractChange(msgspec.Struct, frozen=True, gc=False):
    """One change a caller of an older version must make to speak current, in
    the engine's words: a change of the input schema, cosmetic kinds left out."""

    kind: str
    path: str
    message: str
    old: Any = None
    new: Any = None


def contract_changes(report: ChangeReport) -> tuple[ContractChange, ...]:
    """The changes of `report` (older version -> current) that a caller must act on."""
    return tuple(
        ContractChange(
            kind=str(change.kind),
            path=change.path,
            message=change.message,
            # plain JSON values: the payload digest canonicalises them
            old=msgspec.to_builtins(change.old),
            new=msgspec.to_builtins(change.new),
        )
        for change in report.changes
        # (a cosmetic change, by the engine's own severity, asks nothing of a caller)
        if change.path.startswith(_INPUT) and change.severity is not Severity.COSMETIC
    )


class VersionEntry(msgspec.Struct, frozen=True, gc=False):
    """A served (non-retired) version of a tool and its route to current.

    `changes` (every version but current): what changed from it to current,
    computed by the registry so that every SDK names the same changes; None in
    payloads of registries that predate it (the Python gate then runs the engine)."""

    version: int
    digest: str
    state: str
    definition: dict[str, Any]
    route: tuple[RouteStep, ...] = ()
    sunset: str | None = None
    changes: tuple[ContractChange, ...] | None = None


class RetiredVersion(msgspec.Struct, frozen=True, gc=False):
    """A retired version; `definition` is None in payloads of registries that
    predate it (the gate then cannot name it as a call's inferred version).
    `changes`: as `VersionEntry.changes`, present only with `definition`."""

    version: int
    digest: str
    definition: dict[str, Any] | None = None
    changes: tuple[ContractChange, ...] | None = None


class ToolEntry(msgspec.Struct, frozen=True, gc=False):
    """A tool: its current version number, served versions (current first)
    and retired versions."""

    name: str
    current: int
    versions: tuple[VersionEntry, ...]
    retired: tuple[RetiredVersion, ...] = ()

    @property
    def current_version(self) -> VersionEntry:
        return self.versions[0]

    def served(self, version: int) -> VersionEntry | None:
        for entry in self.versions:
            if entry.version == version:
                return entry
        return None

    def is_retired(self, version: int) -> bool:
        return any(r.version == version for r in self.retired)

    def _known(self) -> Iterator[tuple[int, str]]:
        """(version, digest) of every served, then every retired version."""
        for entry in self.versions:
            yield entry.version, entry.digest
        for retired in self.retired:
            yield retired.version, retired.digest

    def digest_of(self, version: int) -> str | None:
        """The digest of a served or retired version; None for one never served."""
        return next((d for v, d in self._known() if v == version), None)

    def version_of_digest(self, value: str) -> int | None:
        """The version (served or retired) whose definition has this digest."""
        return next((v for v, d in self._known() if d == value), None)


class AliasContract(msgspec.Struct, frozen=True, gc=False):
    tool: str
    version: int


class AliasEntry(msgspec.Struct, frozen=True, gc=False):
    """An old tool name resolving to `target`, speaking a fixed contract.
    `route` is None while no verified route from the contract to current exists."""

    name: str
    target: str
    contract: AliasContract
    definition: dict[str, Any]
    route: tuple[RouteStep, ...] | None = None


class ToolsetPayload(msgspec.Struct, frozen=True, gc=False):
    """`gating=False`: the namespace's policy turned gating off (the gate passes calls
    through without version checks); payloads of gated namespaces leave it out."""

    namespace: str
    digest: str
    tools: tuple[ToolEntry, ...] = ()
    aliases: tuple[AliasEntry, ...] = ()
    gating: bool = True


def payload_digest(payload: Mapping[str, Any]) -> str:
    """`sha256:` + SHA-256 of the canonical JSON of the payload without `digest`."""
    body = {key: value for key, value in payload.items() if key != "digest"}
    return digest_of_canonical(canonical_json(body))


Digests = Mapping[int, "str | Exception"]


class Toolset:
    """An immutable, digest-verified snapshot of one namespace's toolset."""

    __slots__ = ("_aliases", "_origin", "_payload", "_raw", "_tools")

    def __init__(self, payload: ToolsetPayload, raw: bytes) -> None:
        """Use `from_json` / `from_payload`: they verify the digest."""
        self._payload = payload
        self._raw = raw
        self._tools: Mapping[str, ToolEntry] = MappingProxyType({t.name: t for t in payload.tools})
        self._aliases: Mapping[str, AliasEntry] = MappingProxyType(
            {a.name: a for a in payload.aliases}
        )
        # set by Toolset.sync / the watcher: where this snapshot came from
        self._origin: SyncSource | None = None

    @classmethod
    def from_json(cls, data: bytes) -> Toolset:
        """Load a sync payload; raises `ToolsetError` on an unreadable,
        tampered (digest mismatch) or inconsistent one."""
        data = bytes(data)
        with _collection_paused():
            try:  # the registry's own payloads: checked on their bytes (registry.sdk._verify)
                payload = msgspec.json.decode(data, type=ToolsetPayload)
                digests = digests_from_bytes(data, payload)
            except (msgspec.ValidationError, msgspec.DecodeError, ValueError, RecursionError):
                digests = None
            if digests is not None:
                _check_consistency(payload, digests)
                return cls(payload, data)
            try:  # any other payload: its JSON written canonically
                tree, floats = parse_json(data)
            except msgspec.DecodeError as exc:
                raise ToolsetError(f"toolset payload is not JSON: {exc}") from exc
            except RecursionError:
                raise ToolsetError("toolset payload is nested too deeply") from None
            return cls._load(tree, floats, data)

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Toolset:
        """Load an already parsed payload (its `digest` is checked all the same)."""
        try:
            data = canonical_json(dict(payload))
        except DigestError as exc:
            raise ToolsetError(f"toolset payload cannot be canonicalised: {exc}") from exc
        return cls.from_json(data)

    @classmethod
    def _load(cls, tree: Any, floats: bool, data: bytes) -> Toolset:
        if not isinstance(tree, dict):
            raise ToolsetError("toolset payload is not a JSON object")
        claimed = tree.get("digest")
        try:
            payload = msgspec.convert(tree, ToolsetPayload)
        except (msgspec.ValidationError, ConverterError) as exc:
            # a digest mismatch is said first
            _require_digest(claimed, lambda: payload_digest(tree))
            raise ToolsetError(f"invalid toolset payload: {exc}") from exc
        checked = _require_digest(claimed, lambda: verify_payload(tree, payload))
        digests = checked.digests
        if floats:  # the Structs hold numbers as parse_json read them: read them plainly
            plain = msgspec.json.decode(data, type=ToolsetPayload)
            digests = {
                id(new): digests[id(old)]
                for old, new in zip(definitions(payload), definitions(plain), strict=True)
            }
            payload = plain
        _check_consistency(payload, digests)
        return cls(payload, data)

    @classmethod
    async def sync(
        cls,
        url: str,
        namespace: str,
        *,
        cache: str | os.PathLike[str] | None = None,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        client: httpx.AsyncClient | None = None,
        backoff: Backoff | None = None,
    ) -> Toolset:
        """Boot sync from the registry at `url`, falling back to a digest-checked
        `cache` on an outage; `SyncError` otherwise. See `registry.sdk.sync`."""
        from registry.sdk.sync import sync_toolset

        return await sync_toolset(
            url,
            namespace,
            cache=cache,
            token=token,
            timeout=timeout,
            retries=retries,
            client=client,
            backoff=backoff,
            toolset_class=cls,
        )

    def watch(
        self,
        on_change: OnChange | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        cache: str | os.PathLike[str] | None = None,
        wait: int = 30,
        timeout: float | None = None,
        client: httpx.AsyncClient | None = None,
        backoff: Backoff | None = None,
        min_interval: float = 1.0,
    ) -> ToolsetWatcher:
        """A started `ToolsetWatcher` keeping this namespace current (needs a running
        event loop); url, token and cache default to those of `Toolset.sync`."""
        from registry.sdk.sync import watch_toolset

        return watch_toolset(
            self,
            on_change,
            url=url,
            token=token,
            cache=cache,
            wait=wait,
            timeout=timeout,
            client=client,
            backoff=backoff,
            min_interval=min_interval,
        )

    @property
    def digest(self) -> str:
        return self._payload.digest

    @property
    def etag(self) -> str:
        return f'"{self._payload.digest}"'

    @property
    def namespace(self) -> str:
        return self._payload.namespace

    @property
    def gating(self) -> bool:
        """False when the namespace's policy turned gating off."""
        return self._payload.gating

    @property
    def payload(self) -> ToolsetPayload:
        return self._payload

    @property
    def tools(self) -> tuple[ToolEntry, ...]:
        return self._payload.tools

    @property
    def aliases(self) -> tuple[AliasEntry, ...]:
        return self._payload.aliases

    def tool(self, name: str) -> ToolEntry | None:
        return self._tools.get(name)

    def alias(self, name: str) -> AliasEntry | None:
        return self._aliases.get(name)

    def to_json(self) -> bytes:
        """The payload bytes this snapshot was loaded from (they verify)."""
        return self._raw

    def __repr__(self) -> str:
        return (
            f"Toolset(namespace={self.namespace!r}, digest={self.digest!r}, "
            f"tools={len(self.tools)}, aliases={len(self.aliases)})"
        )


_Found = TypeVar("_Found", str, Checked)


def _require_digest(claimed: object, compute: Callable[[], _Found]) -> _Found:
    """What `compute` found (the payload digest, or a `Checked` holding it), unless
    the payload cannot be canonicalised or its digest is not the one `claimed`."""
    try:
        found = compute()
    except DigestError as exc:
        raise ToolsetError(f"toolset payload cannot be canonicalised: {exc}") from exc
    computed = found if isinstance(found, str) else found.payload_digest
    if claimed != computed:
        raise ToolsetError(
            f"toolset digest mismatch: the payload says {claimed!r} but its content "
            f"hashes to {computed!r}; refusing a tampered or corrupted toolset"
        )
    return found


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a payload is read: it allocates hundreds of
    thousands of containers, all live, and the collections that would run meanwhile
    scan the whole heap again and again (over half the time of a 4.6 MB payload in a
    process that already holds one, measured; one young collection runs after)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _check_route(route: tuple[RouteStep, ...], start: int, current: int, what: str) -> None:
    problem = _route_problem(route, start, current)
    if problem is not None:
        raise ToolsetError(f"{what}: {problem}")


def _route_problem(route: tuple[RouteStep, ...], start: int, current: int) -> str | None:
    at = start
    for step in route:
        if step.from_ != at:
            return f"route step from v{step.from_} where v{at} was expected"
        at = step.to
    if at != current:
        return f"route ends at v{at}, not at current v{current}"
    return None


def _check_digest(digests: Digests, definition: dict[str, Any], expected: str, what: str) -> None:
    actual = digests.get(id(definition), expected)
    if actual == expected:
        return
    if isinstance(actual, Exception):
        raise ToolsetError(f"{what}: {actual}")
    raise ToolsetError(f"{what}: definition hashes to {actual}, not {expected}")


def _check_consistency(payload: ToolsetPayload, digests: Digests) -> None:
    """Names unique, current first, routes to current, definitions hashing to their
    digests (`digests`: by `id()` of a definition, its digest as found, or nothing
    when it hashes to what the payload states; see registry/sdk/_verify.py).
    The messages are built only for a payload that fails: a 2,001-tool payload
    is read in about twice a plain decode (bench/toolset_read_bench.py)."""
    by_name = {tool.name: tool for tool in payload.tools}
    if len(by_name) != len(payload.tools):
        twice = next(t.name for i, t in enumerate(payload.tools) if by_name[t.name] is not t)
        raise ToolsetError(f"tool {twice!r} appears twice")
    names = set(by_name)
    for tool in payload.tools:
        versions = tool.versions
        current = tool.current
        if not versions or versions[0].version != current:
            raise ToolsetError(f"tool {tool.name!r}: the first served version must be current")
        retired = tool.retired
        if len(versions) == 1 and not retired and not versions[0].route and not digests:
            continue  # one current version, no route, hashing as stated: nothing to check
        seen = {gone.version for gone in retired}
        for entry in versions:
            version = entry.version
            if version in seen:
                raise ToolsetError(f"tool {tool.name!r} v{version} is listed twice")
            seen.add(version)
            if digests and digests.get(id(entry.definition), entry.digest) != entry.digest:
                what = f"tool {tool.name!r} v{version}"
                _check_digest(digests, entry.definition, entry.digest, what)
            # only current may have no route; every route leads to current
            if entry.route or version != current:
                problem = _route_problem(entry.route, version, current)
                if problem is not None:
                    raise ToolsetError(f"tool {tool.name!r} v{version}: {problem}")
        for gone in retired if digests else ():
            if gone.definition is not None:
                what = f"tool {tool.name!r} v{gone.version}"
                _check_digest(digests, gone.definition, gone.digest, what)
    for alias in payload.aliases:
        what = f"alias {alias.name!r}"
        if alias.name in names:
            raise ToolsetError(f"{what} has the name of a tool or another alias")
        names.add(alias.name)
        target = by_name.get(alias.target)
        if target is None:
            raise ToolsetError(f"{what}: target tool {alias.target!r} is not in the toolset")
        contract_tool = by_name.get(alias.contract.tool)
        if contract_tool is not None:
            expected = contract_tool.digest_of(alias.contract.version)
            actual = digests.get(id(alias.definition), expected)
            if isinstance(actual, Exception):
                raise ToolsetError(f"{what}: {actual}")
            if expected is not None and actual != expected:
                raise ToolsetError(
                    f"{what}: its definition hashes to {actual}, not to the contract "
                    f"{alias.contract.tool} v{alias.contract.version} ({expected})"
                )
        if alias.route is not None:
            _check_route(alias.route, alias.contract.version, target.current, what)
