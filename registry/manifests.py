"""Manifests: one file per tool, YAML or JSON, for `registry plan`, `apply` and `check`.

    manifest = load_manifest("tools/billing/db.query.yaml")
    manifests = load_directory("tools/")            # sorted, checked across files
    manifest.to_request()                           # the body of POST .../versions
    manifest.position("/tool/inputSchema/properties/limit")   # -> (line, column)

The shape of a file is `schemas/manifest.schema.json` (JSON Schema 2020-12):

```yaml
namespace: billing
tool: {name: db.query, inputSchema: {type: object, ...}}   # the MCP Tool object
retire: [3]
deprecate: [{version: 2, sunset: "2027-06-01T00:00:00Z"}]
converters: [{from: 3, ops: [{op: rename, from: /timeout_ms, to: /timeout}]}]
aliases: [{name: db_query_v1, contract: {tool: db.query, version: 1}}]
accept: [{kind: default-added, path: /inputSchema/properties/limit/default, reason: ...}]
server_version: 1.5.0     # the release's serverInfo.version (check compares its bump)
```

A namespace policy manifest (`PolicyManifest`) has `policy` instead of `tool`
and nothing else about a tool: `{namespace, policy: {gating, reason, relax, review,
four_eyes}}`
(`registry.policy.acceptance.NamespacePolicy`). `collect_bundle` reads both
kinds; `collect_directory` / `collect_sources` / `load_directory` read tool
manifests and refuse a policy file, naming it (only plan, apply and check take
policies).

Every refusal is a `ManifestError` whose `str()` is one line a person (or an
editor's problem matcher) acts on, `tools/db.yaml:7:5: /tool/name: ...`. A file
is checked in this order, the first problem wins:

1. reading and parsing (`registry.documents`: size and depth limits, YAML alias
   budget, duplicate keys, JSON data only);
2. the manifest schema (`jsonschema`'s `best_match` of the 2020-12 validator),
   with `format: date-time` checked as RFC 3339 (a time zone is required);
3. the tool definition (`registry.definitions.validate_definition`);
4. the converter operations (`registry.compat.parse_ops`);
5. consistency inside the file (no alias named like its tool, no alias twice,
   one converter per source version, no version both retired and deprecated,
   no change accepted twice); for a policy manifest, the policy's own checks
   (`check_policy`: known kinds, tool names, a reason to turn gating off).

`load_directory` adds the checks across files: one manifest per
(namespace, tool), one policy per namespace, an alias name must not
collide with a tool or another alias of the same namespace, and the
manifests of a namespace that name a `server_version` name the same one.

The schema file is looked up, first match wins: a source checkout
(`schemas/` beside `pyproject.toml` above this package), package data
(`registry/schemas/manifest.schema.json` via `importlib.resources`), then an
installed wheel's data files (`<prefix>/share/mcp-tool-registry/schemas/`, the
way `migrations/` ships). Nothing is copied: the repository's `schemas/` is
the only source.

This module needs the base install only (no service imports).
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec
import yaml
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from registry.canonical import DigestError, digest
from registry.compat.converters import ConverterError, parse_ops
from registry.compat.jsonvalues import a_json_type, article
from registry.definitions import DefinitionError, validate_definition
from registry.documents import DocumentError, located, parse_document, read_source
from registry.patterns import linear_validator
from registry.pointers import escape
from registry.pointers import join as join_pointer
from registry.pointers import split as split_pointer
from registry.policy.acceptance import AcceptRequest, NamespacePolicy, check_policy
from registry.policy.capabilities import CapabilityError, parse_initialize
from registry.policy.plan import AliasIntent, ContractIntent, ManifestBody, PolicyBody
from registry.policy.publishing import ConverterRequest, DeprecationRequest, PublishRequest

__all__ = [
    "CAPTURED_INITIALIZE",
    "MANIFEST_SUFFIXES",
    "SCHEMA_NAME",
    "Alias",
    "AliasContract",
    "Manifest",
    "ManifestError",
    "PolicyManifest",
    "collect_bundle",
    "collect_directory",
    "collect_sources",
    "load_directory",
    "load_manifest",
    "manifest_files",
    "manifest_schema",
    "schema_location",
]

SCHEMA_NAME = "manifest.schema.json"
MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
# `registry capture` writes the server's initialize result beside its manifests under
# this name; a directory scan skips such a file when it is an initialize result.
CAPTURED_INITIALIZE = "initialize.json"
_DATA_SUBDIR = Path("share") / "mcp-tool-registry" / "schemas"
_MAX_MESSAGE = 200


# -- errors --------------------------------------------------------------------


class ManifestError(ValueError):
    """A manifest (or a directory of them) that cannot be used.

    `line` and `column` are 1-based and None when the problem has no place in
    a file (a missing file, an empty directory); `pointer` is the JSON Pointer
    of the offending value in the file, or None. `str()` is
    `path:line:column: /pointer: message`, leaving out what is unknown.
    """

    def __init__(
        self,
        path: str,
        line: int | None,
        column: int | None,
        pointer: str | None,
        message: str,
    ) -> None:
        self.path = path
        self.line = line
        self.column = column
        self.pointer = pointer
        self.message = message
        super().__init__(self._render())

    def _render(self) -> str:
        return located(self.path, self.line, self.column, self.pointer, self.message)


# -- the manifest ----------------------------------------------------------------


class AliasContract(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The registered version an alias speaks."""

    tool: str
    version: int


class Alias(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """An old tool name resolving to the manifest's tool (the alias target)."""

    name: str
    contract: AliasContract


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    """One loaded, validated manifest file.

    `tool` is the MCP Tool definition exactly as written; `digest` its
    canonical digest; `text` the file's text, which `position` reads.
    """

    path: str
    namespace: str
    tool: dict[str, Any]
    retire: list[int] = msgspec.field(default_factory=list)
    require_idle: str | None = None  # refuse `retire` while a version is still called
    deprecate: list[DeprecationRequest] = msgspec.field(default_factory=list)
    converters: list[ConverterRequest] = msgspec.field(default_factory=list)
    aliases: list[Alias] = msgspec.field(default_factory=list)
    accept: list[AcceptRequest] = msgspec.field(default_factory=list)
    # the release's `serverInfo.version`, for `check`'s semver comparison (never sent)
    server_version: str | None = None
    create_namespace: bool = False  # create the namespace if missing (never implicitly)
    digest: str
    text: str

    @property
    def name(self) -> str:
        """The tool's name."""
        name: str = self.tool["name"]
        return name

    @property
    def key(self) -> tuple[str, str]:
        """(namespace, tool name): unique in a directory of manifests."""
        return (self.namespace, self.name)

    def position(
        self, pointer: str, *, key: bool = False, nearest: bool = False
    ) -> tuple[int, int] | None:
        """Line and column (1-based) of the value at `pointer` (a JSON Pointer
        into the file: `/tool/inputSchema/properties/limit`).

        `key=True` answers where an object member's name is written instead
        (the line a person reads as "the property"); `nearest=True` falls back
        to the closest ancestor that exists (a property removed in this file is
        reported at its parent). None when nothing is found or the pointer is
        not a JSON Pointer."""
        return _position(self.text, pointer, key=key, nearest=nearest)

    def to_request(self) -> PublishRequest:
        """The publish (or check) body: `{definition, retire, deprecate, converters}`.
        Aliases are registered separately (`PUT .../aliases/{name}`)."""
        return PublishRequest(
            definition=self.tool,
            retire=list(self.retire),
            deprecate=list(self.deprecate),
            converters=list(self.converters),
            accept=list(self.accept) if self.accept else msgspec.UNSET,
            require_idle=self.require_idle,
        )

    def to_body(self) -> ManifestBody:
        """The manifest as `POST /v1/apply` takes it (`source` is the file's path)."""
        return ManifestBody(
            namespace=self.namespace,
            tool=self.tool,
            retire=list(self.retire),
            require_idle=self.require_idle,
            deprecate=list(self.deprecate),
            converters=list(self.converters),
            aliases=[
                AliasIntent(
                    name=alias.name,
                    contract=ContractIntent(
                        tool=alias.contract.tool, version=alias.contract.version
                    ),
                )
                for alias in self.aliases
            ],
            accept=list(self.accept) if self.accept else msgspec.UNSET,
            create_namespace=self.create_namespace,
            source=self.path,
        )

    def alias_bodies(self) -> list[tuple[str, dict[str, Any]]]:
        """(alias name, body of `PUT /v1/namespaces/{ns}/aliases/{alias}`) per alias:
        `{"target": <this tool>, "contract": {"tool", "version"}}`."""
        return [
            (
                alias.name,
                {
                    "target": self.name,
                    "contract": {"tool": alias.contract.tool, "version": alias.contract.version},
                },
            )
            for alias in self.aliases
        ]


class PolicyManifest(msgspec.Struct, frozen=True, kw_only=True):
    """One loaded namespace policy manifest: `{namespace, policy}`."""

    path: str
    namespace: str
    policy: NamespacePolicy
    text: str
    create_namespace: bool = False  # create the namespace if missing (never implicitly)

    def position(
        self, pointer: str, *, key: bool = False, nearest: bool = False
    ) -> tuple[int, int] | None:
        """As `Manifest.position`."""
        return _position(self.text, pointer, key=key, nearest=nearest)

    def to_body(self) -> PolicyBody:
        """The policy as `POST /v1/apply` takes it (`source` is the file's path)."""
        return PolicyBody(
            namespace=self.namespace,
            policy=self.policy,
            create_namespace=self.create_namespace,
            source=self.path,
        )


_TOOL_KEYS = ("tool", "retire", "require_idle", "deprecate", "converters", "aliases", "accept")


# -- the schema ------------------------------------------------------------------


def _schema_candidates() -> list[tuple[str, Any]]:
    """(description, Path or Traversable) in lookup order; see the module docstring."""
    candidates: list[tuple[str, Any]] = []
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file():
        candidates.append((str(checkout / "schemas"), checkout / "schemas" / SCHEMA_NAME))
    try:
        packaged = resources.files("registry").joinpath("schemas", SCHEMA_NAME)
        candidates.append(("package data registry/schemas", packaged))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - odd loaders
        pass
    data_dirs = [Path(sysconfig.get_path("data")), Path(sys.prefix)]
    user_scheme = f"{os.name}_user"
    if user_scheme in sysconfig.get_scheme_names():
        data_dirs.append(Path(sysconfig.get_path("data", user_scheme)))
    for data in data_dirs:
        candidates.append((str(data / _DATA_SUBDIR), data / _DATA_SUBDIR / SCHEMA_NAME))
    return candidates


@functools.cache
def schema_location() -> str:
    """Where the manifest schema was found (a path, or a package-data location)."""
    return _find_schema()[0]


def _find_schema() -> tuple[str, str]:
    candidates = _schema_candidates()
    for _, candidate in candidates:
        try:
            if candidate.is_file():
                return str(candidate), candidate.read_text(encoding="utf-8")
        except OSError:  # pragma: no cover - unreadable candidate
            continue
    raise FileNotFoundError(
        f"{SCHEMA_NAME} not found; looked in: " + ", ".join(name for name, _ in candidates)
    )


@functools.cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_find_schema()[1])
    return schema


def manifest_schema() -> dict[str, Any]:
    """A copy of the manifest JSON Schema (`schemas/manifest.schema.json`)."""
    return json.loads(json.dumps(_schema()))  # type: ignore[no-any-return]


_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$", re.ASCII
)

# jsonschema's own `date-time` check needs an optional package; this one is
# RFC 3339 (a time zone is required), with the calendar checked by datetime.
_FORMATS = FormatChecker(formats=())


@_FORMATS.checks("date-time", raises=ValueError)
def _is_date_time(instance: object) -> bool:
    if not isinstance(instance, str):
        return True
    if _RFC3339.fullmatch(instance) is None:
        return False
    _parse_datetime(instance)  # the calendar: month 13 or February 30 raise
    return True


def _parse_datetime(text: str) -> datetime:
    return datetime.fromisoformat(text.upper().replace("Z", "+00:00"))


@functools.cache
def _validator() -> Draft202012Validator:
    # RE2 for the schema's `pattern`s: its `$` matches only at the very end, as
    # ECMA-262's does (Python's also before a final newline: "billing\n" passed).
    strict: Any = linear_validator(Draft202012Validator)
    validator: Draft202012Validator = strict(_schema(), format_checker=_FORMATS)
    return validator


# -- loading one file -------------------------------------------------------------


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Read, parse and validate one tool manifest file (see the module docstring)."""
    return _tool_only(load_document(path))


def load_document(path: str | os.PathLike[str]) -> Manifest | PolicyManifest:
    """Read, parse and validate one manifest file: a tool's, or a namespace policy."""
    name = os.fspath(path)
    try:
        raw = read_source(name)
    except DocumentError as exc:
        raise ManifestError(name, exc.line, exc.column, exc.pointer, exc.message) from None
    return _load_text(raw, name)


def _tool_only(loaded: Manifest | PolicyManifest) -> Manifest:
    if isinstance(loaded, PolicyManifest):
        raise _at(
            loaded.path,
            loaded.text,
            "/policy",
            "a namespace policy manifest: only `registry plan`, `apply` and `check` read "
            "policies; this reads tool manifests",
            key=True,
        )
    return loaded


def _shape_error(document: Any, text: str, name: str) -> ManifestError | None:
    """A file that is neither a tool manifest nor a policy manifest, said plainly."""
    if not isinstance(document, Mapping):
        return None
    if "policy" in document:
        extra = next((key for key in _TOOL_KEYS if key in document), None)
        if extra is None:
            return None
        return _at(
            name,
            text,
            f"/{extra}",
            f"a namespace policy manifest declares no tool: {extra!r} belongs in a tool's manifest",
            key=True,
        )
    if "tool" not in document:
        found = _position(text, "", key=False, nearest=True)
        line, column = found if found else (None, None)
        return ManifestError(
            name,
            line,
            column,
            "/tool",
            "required field 'tool' is missing (a namespace policy manifest has 'policy' instead)",
        )
    return None


def _load_text(raw: bytes, name: str) -> Manifest | PolicyManifest:
    try:
        document = parse_document(raw, name)
    except DocumentError as exc:
        raise _document_error(exc, raw, name) from None
    text = raw.decode("utf-8-sig")
    error = best_match(_validator().iter_errors(document))
    if error is not None:
        raise _shape_error(document, text, name) or _schema_error(error, text, name)
    if "policy" in document:
        policy = msgspec.convert(document["policy"], NamespacePolicy)
        problems = check_policy(policy)
        if problems:
            raise _at(name, text, "/policy" + problems[0][0], problems[0][1])
        return PolicyManifest(
            path=name,
            namespace=document["namespace"],
            policy=policy,
            text=text,
            create_namespace=bool(document.get("create_namespace", False)),
        )
    tool: dict[str, Any] = document["tool"]
    try:
        validate_definition(tool)
    except DefinitionError as exc:
        raise _at(name, text, "/tool" + exc.pointer, exc.message) from None
    converters: list[ConverterRequest] = []
    for index, converter in enumerate(document.get("converters", [])):
        for number, op in enumerate(converter["ops"]):
            try:
                parse_ops([op])
            except ConverterError as exc:
                pointer = f"/converters/{index}/ops/{number}"
                raise _at(name, text, pointer, _shorten(str(exc))) from None
        converters.append(ConverterRequest(from_=int(converter["from"]), ops=converter["ops"]))
    deprecate = [
        DeprecationRequest(
            version=int(entry["version"]),
            sunset=_parse_datetime(entry["sunset"]) if "sunset" in entry else None,
        )
        for entry in document.get("deprecate", [])
    ]
    aliases = [
        Alias(
            name=entry["name"],
            contract=AliasContract(
                tool=entry["contract"]["tool"], version=int(entry["contract"]["version"])
            ),
        )
        for entry in document.get("aliases", [])
    ]
    retire = [int(version) for version in document.get("retire", [])]
    accept = [msgspec.convert(entry, AcceptRequest) for entry in document.get("accept", [])]
    _check_consistency(name, text, tool["name"], retire, deprecate, converters, aliases)
    accepted: set[tuple[str, str]] = set()
    for index, entry in enumerate(accept):
        if (entry.kind, entry.path) in accepted:
            message = f"{entry.kind} at {entry.path} is accepted twice"
            raise _at(name, text, f"/accept/{index}", message)
        accepted.add((entry.kind, entry.path))
    try:
        tool_digest = digest(tool)
    except DigestError as exc:
        raise _at(name, text, "/tool", str(exc)) from None
    return Manifest(
        path=name,
        namespace=document["namespace"],
        tool=tool,
        retire=retire,
        require_idle=document.get("require_idle"),
        deprecate=deprecate,
        converters=converters,
        aliases=aliases,
        accept=accept,
        server_version=document.get("server_version"),
        create_namespace=bool(document.get("create_namespace", False)),
        digest=tool_digest,
        text=text,
    )


def _check_consistency(
    name: str,
    text: str,
    tool_name: str,
    retire: Sequence[int],
    deprecate: Sequence[DeprecationRequest],
    converters: Sequence[ConverterRequest],
    aliases: Sequence[Alias],
) -> None:
    seen: set[int] = set()
    for index, entry in enumerate(deprecate):
        pointer = f"/deprecate/{index}/version"
        if entry.version in retire:
            raise _at(name, text, pointer, f"version {entry.version} is also in 'retire'")
        if entry.version in seen:
            raise _at(name, text, pointer, f"version {entry.version} is deprecated twice")
        seen.add(entry.version)
    seen = set()
    for index, converter in enumerate(converters):
        if converter.from_ in seen:
            raise _at(
                name,
                text,
                f"/converters/{index}/from",
                f"a second converter from version {converter.from_}",
            )
        seen.add(converter.from_)
    names: set[str] = set()
    for index, alias in enumerate(aliases):
        pointer = f"/aliases/{index}/name"
        if alias.name == tool_name:
            raise _at(name, text, pointer, f"alias {alias.name!r} is the name of its own tool")
        if alias.name in names:
            raise _at(name, text, pointer, f"alias {alias.name!r} is declared twice")
        names.add(alias.name)


# -- loading a directory ----------------------------------------------------------


def manifest_files(directory: str | os.PathLike[str]) -> list[Path]:
    """The manifest files under `directory`, recursively, sorted by their
    relative path: `*.yaml`, `*.yml` and `*.json`; hidden files and anything
    under a hidden directory (`.git/`, `.cache/`) are skipped, and symbolic
    links to directories are not followed."""
    root = Path(directory)
    found: list[tuple[str, Path]] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [sub for sub in subfolders if not sub.startswith(".")]
        for file_name in files:
            if file_name.startswith(".") or not file_name.lower().endswith(MANIFEST_SUFFIXES):
                continue
            path = Path(folder) / file_name
            if path.is_file():
                found.append((path.relative_to(root).as_posix(), path))
    return [path for _, path in sorted(found)]


Bundle = tuple[list[Manifest], list[PolicyManifest], list[ManifestError]]


def collect_bundle(directory: str | os.PathLike[str]) -> Bundle:
    """Every tool manifest and policy manifest that loads, and every problem found,
    sorted by file and line. A file given instead of a directory is loaded on its own."""
    name = os.fspath(directory)
    root = Path(directory)
    if root.is_file():
        paths = [root]
    elif root.is_dir():
        paths = manifest_files(root)
        if not paths:
            return (
                [],
                [],
                [
                    ManifestError(
                        name, None, None, None, "no manifest files (*.yaml, *.yml, *.json) found"
                    )
                ],
            )
    else:
        return [], [], [ManifestError(name, None, None, None, "no such file or directory")]
    loaded: list[Manifest | PolicyManifest] = []
    errors: list[ManifestError] = []
    for path in paths:
        try:
            loaded.append(load_document(path))
        except ManifestError as exc:
            if not (root.is_dir() and _is_captured_initialize(path)):
                errors.append(exc)
    return _checked_together(loaded, errors, [os.fspath(path) for path in paths])


def collect_directory(
    directory: str | os.PathLike[str],
) -> tuple[list[Manifest], list[ManifestError]]:
    """`collect_bundle` for tool manifests only: a policy manifest is a problem."""
    return _tools_only(collect_bundle(directory))


def _is_captured_initialize(path: Path) -> bool:
    """`initialize.json` holding an initialize result (`registry capture` writes it)."""
    if path.name != CAPTURED_INITIALIZE:
        return False
    try:
        parse_initialize(read_source(path))
    except (DocumentError, CapabilityError):
        return False
    return True


def collect_sources(
    sources: Sequence[tuple[str, bytes]],
) -> tuple[list[Manifest], list[ManifestError]]:
    """`collect_directory` for files already in memory, as (name, content) pairs
    (an upload): the same checks, the same errors."""
    loaded: list[Manifest | PolicyManifest] = []
    errors: list[ManifestError] = []
    for name, raw in sources:
        try:
            loaded.append(_load_text(raw, name))
        except ManifestError as exc:
            errors.append(exc)
    return _tools_only(_checked_together(loaded, errors, [name for name, _ in sources]))


def _tools_only(bundle: Bundle) -> tuple[list[Manifest], list[ManifestError]]:
    manifests, policies, errors = bundle
    for policy in policies:
        try:
            _tool_only(policy)
        except ManifestError as exc:
            errors.append(exc)
    return manifests, errors


def _checked_together(
    loaded: list[Manifest | PolicyManifest], errors: list[ManifestError], names: list[str]
) -> Bundle:
    """The cross-file checks; the manifests without problems, and every problem sorted
    by file (in `names` order) and line."""
    manifests = [m for m in loaded if isinstance(m, Manifest)]
    policies = [p for p in loaded if isinstance(p, PolicyManifest)]
    errors = [*errors, *_cross_file_errors(manifests), *_policy_errors(policies)]
    bad = {error.path for error in errors}
    good = [manifest for manifest in manifests if manifest.path not in bad]
    order = {name: index for index, name in enumerate(names)}
    errors.sort(key=lambda e: (order.get(e.path, -1), e.line or 0, e.column or 0))
    return good, [p for p in policies if p.path not in bad], errors


def _policy_errors(policies: Iterable[PolicyManifest]) -> list[ManifestError]:
    first: dict[str, PolicyManifest] = {}
    errors = []
    for policy in policies:
        if policy.namespace in first:
            earlier = first[policy.namespace]
            found = earlier.position("/namespace")
            where = f"{earlier.path}:{found[0]}" if found else earlier.path
            message = f"the policy of namespace {policy.namespace!r} is already declared in {where}"
            errors.append(_at(policy.path, policy.text, "/namespace", message))
        else:
            first[policy.namespace] = policy
    return errors


def load_directory(directory: str | os.PathLike[str]) -> list[Manifest]:
    """All manifests under `directory`, sorted by relative path; raises the
    first `ManifestError` (by file, then line) when anything is wrong."""
    manifests, errors = collect_directory(directory)
    if errors:
        raise errors[0]
    return manifests


def _cross_file_errors(manifests: Iterable[Manifest]) -> list[ManifestError]:
    errors: list[ManifestError] = []
    tools: dict[tuple[str, str], tuple[Manifest, str]] = {}
    ordered = list(manifests)
    for manifest in ordered:
        first = tools.get(manifest.key)
        if first is not None:
            errors.append(
                _at(
                    manifest.path,
                    manifest.text,
                    "/tool/name",
                    f"tool {manifest.name!r} of namespace {manifest.namespace!r} is already "
                    f"declared in {_where(*first)}",
                )
            )
            continue
        tools[manifest.key] = (manifest, "/tool/name")
    versions: dict[str, Manifest] = {}
    for manifest in ordered:
        if manifest.server_version is None:
            continue
        first_named = versions.setdefault(manifest.namespace, manifest)
        if first_named.server_version != manifest.server_version:
            errors.append(
                _at(
                    manifest.path,
                    manifest.text,
                    "/server_version",
                    f"server_version {manifest.server_version!r} of namespace "
                    f"{manifest.namespace!r} differs from {first_named.server_version!r} "
                    f"({_where(first_named, '/server_version')})",
                )
            )
    aliases: dict[tuple[str, str], tuple[Manifest, str]] = {}
    for manifest in ordered:
        for index, alias in enumerate(manifest.aliases):
            pointer = f"/aliases/{index}/name"
            key = (manifest.namespace, alias.name)
            if key in tools:
                message = (
                    f"alias {alias.name!r} collides with tool {alias.name!r} of namespace "
                    f"{manifest.namespace!r} ({_where(*tools[key])})"
                )
            elif key in aliases:
                message = (
                    f"alias {alias.name!r} of namespace {manifest.namespace!r} is already "
                    f"declared in {_where(*aliases[key])}"
                )
            else:
                aliases[key] = (manifest, pointer)
                continue
            errors.append(_at(manifest.path, manifest.text, pointer, message))
    return errors


def _where(manifest: Manifest, pointer: str) -> str:
    found = manifest.position(pointer)
    return f"{manifest.path}:{found[0]}" if found else manifest.path


# -- error positions ----------------------------------------------------------------


def _at(name: str, text: str, pointer: str, message: str, *, key: bool = False) -> ManifestError:
    found = _position(text, pointer, key=key, nearest=True)
    line, column = found if found else (None, None)
    return ManifestError(name, line, column, pointer, message)


def _document_error(exc: DocumentError, raw: bytes, name: str) -> ManifestError:
    """A parse refusal; when the text composes (a duplicate key, an alias bomb,
    a non-JSON tag), the pointer of the place it names is added."""
    pointer = exc.pointer
    if pointer is None and exc.line is not None and exc.column is not None:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = None
        root = _compose(text) if text is not None else None
        if root is not None:
            keys_only = exc.message.startswith("duplicate key")
            pointer = _pointer_at(root, exc.line, exc.column, keys_only=keys_only)
    return ManifestError(name, exc.line, exc.column, pointer, exc.message)


def _schema_error(error: ValidationError, text: str, name: str) -> ManifestError:
    pointer = _pointer(error.absolute_path)
    instance = error.instance
    validator = error.validator
    value: Any = error.validator_value
    schema: Any = error.schema
    if validator == "additionalProperties" and isinstance(instance, Mapping):
        allowed = list(schema.get("properties", {}))
        extra = next(key for key in instance if key not in allowed)
        hint = difflib.get_close_matches(extra, allowed, n=1)
        message = f"unknown field {extra!r}"
        message += f"; did you mean {hint[0]!r}?" if hint else ""
        message += " (allowed: " + ", ".join(k for k in allowed if k != "$schema") + ")"
        return _at(name, text, f"{pointer}/{escape(extra)}", message, key=True)
    if validator == "required" and isinstance(instance, Mapping):
        missing = next(field for field in value if field not in instance)
        # the field is named by the pointer; the place is its parent object
        found = _position(text, pointer, key=False, nearest=True)
        line, column = found if found else (None, None)
        return ManifestError(
            name,
            line,
            column,
            f"{pointer}/{escape(missing)}",
            f"required field {missing!r} is missing",
        )
    if validator == "type":
        expected = value if isinstance(value, list) else [value]
        message = (
            f"must be {' or '.join(article(t) for t in expected)}, not {a_json_type(instance)}"
        )
    elif validator == "enum":
        choices = ", ".join(json.dumps(choice) for choice in value)
        if len(value) > _MAX_CHOICES:  # the kinds of change: name the nearest instead
            near = difflib.get_close_matches(str(instance), [str(c) for c in value], n=1)
            choices = f"the {len(value)} allowed values" + (
                f" (did you mean {near[0]!r}?)" if near else ""
            )
        message = f"{_show(instance)} is not one of {choices}"
    elif validator == "const":
        message = f"must be {json.dumps(value)}, not {_show(instance)}"
    elif validator == "pattern":
        message = f"{_show(instance)} does not match {value}"
        if value in _PATTERN_HINTS:
            message += f" ({_PATTERN_HINTS[value]})"
    elif validator == "minimum":
        message = f"must be at least {value}, not {_show(instance)}"
    elif validator == "maximum":
        message = f"must be at most {value}, not {_show(instance)}"
    elif validator == "format" and value == "date-time":
        message = (
            f"{_show(instance)} is not an RFC 3339 date-time with a time zone "
            '(e.g. "2027-06-01T00:00:00Z")'
        )
    elif validator == "uniqueItems" and isinstance(instance, list):
        index = _first_repeat(instance)
        return _at(name, text, f"{pointer}/{index}", f"{_show(instance[index])} is listed twice")
    else:
        message = _shorten(error.message)
    return _at(name, text, pointer, message)


_MAX_CHOICES = 8
_PATTERN_HINTS = {
    "\\S": "a reason is required: say why, in words",
    "^[a-z0-9][a-z0-9-]{0,62}$": "a namespace is 1 to 63 characters of a-z, 0-9 and '-', "
    "not starting with '-'",
    "^[A-Za-z0-9._-]{1,128}$": "a tool name is 1 to 128 characters of A-Z, a-z, 0-9, "
    "'.', '_' and '-'",
    "^(/([^~/]|~[01])*)+$": "a JSON Pointer starts with '/' (e.g. /timeout_ms), "
    "and '~' is written ~0, '/' in a name ~1",
}


def _first_repeat(items: list[Any]) -> int:
    seen: list[str] = []
    for index, item in enumerate(items):
        encoded = json.dumps(item, sort_keys=True)
        if encoded in seen:
            return index
        seen.append(encoded)
    return 0  # pragma: no cover - jsonschema found a repeat


@functools.lru_cache(maxsize=64)
def _compose(text: str) -> Node | None:
    """The YAML node graph of a text that already parsed (so within the
    document limits); None when it does not compose."""
    loader = _PositionLoader(text)
    try:
        node: Node | None = loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return node


_PositionLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _position(text: str, pointer: str, *, key: bool, nearest: bool) -> tuple[int, int] | None:
    if pointer and not pointer.startswith("/"):
        return None
    root = _compose(text)
    if root is None:
        return None
    tokens = split_pointer(pointer)
    node: Node = root
    key_node: Node | None = None
    for token in tokens:
        found = _child(node, token)
        if found is None:
            if not nearest:
                return None
            break
        key_node, node = found
    mark = (key_node if key and key_node is not None else node).start_mark
    return mark.line + 1, mark.column + 1


def _child(node: Node, token: str) -> tuple[Node | None, Node] | None:
    if isinstance(node, MappingNode):
        merged: list[Node] = []
        for key, value in node.value:
            if isinstance(key, ScalarNode) and key.tag == "tag:yaml.org,2002:merge":
                merged.extend(value.value if isinstance(value, SequenceNode) else [value])
            elif isinstance(key, ScalarNode) and key.value == token:
                return key, value
        for source in merged:  # `<<: *base` members come after the mapping's own
            found = _child(source, token)
            if found is not None:
                return found
        return None
    if isinstance(node, SequenceNode) and token.isdigit():
        index = int(token)
        if index < len(node.value) and (token == "0" or not token.startswith("0")):
            return None, node.value[index]
    return None


def _pointer_at(root: Node, line: int, column: int, *, keys_only: bool) -> str | None:
    """The pointer of the member (or item) written at line:column, in document
    order; each node is visited once, so shared (aliased) nodes cost nothing."""
    want = (line - 1, column - 1)
    visited: set[int] = set()
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, pointer = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if not keys_only and (node.start_mark.line, node.start_mark.column) == want:
            return pointer
        children: list[tuple[Node, str]] = []
        if isinstance(node, MappingNode):
            for key, value in node.value:
                child = f"{pointer}/{escape(str(key.value))}"
                if keys_only and (key.start_mark.line, key.start_mark.column) == want:
                    return child
                children.append((value, child))
        elif isinstance(node, SequenceNode):
            children = [(item, f"{pointer}/{i}") for i, item in enumerate(node.value)]
        stack.extend(reversed(children))
    return None


# -- small helpers -------------------------------------------------------------------


def _pointer(path: Iterable[str | int]) -> str:
    return join_pointer(path)


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _show(value: Any) -> str:
    return _shorten(json.dumps(value, ensure_ascii=False))
