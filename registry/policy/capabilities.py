"""Capability fixtures (seed 004): a captured `initialize` result, and which methods it allows.

A server's capability object is a promise about incoming traffic: it names the
methods the server agrees to be asked. Each value has three states, and all
three are kept apart here:

* key absent: the feature does not exist in this session;
* key present, `{}`: the feature exists at its plainest (`resources: {}` means
  `resources/list` and `resources/read` work, and nothing more elaborate);
* key present with sub-keys: refinements, each answered on its own
  (`subscribe: true` promises `resources/subscribe`; `false`, or no sub-key at
  all, does not).

    captured = parse_initialize(raw)        # CapabilityError(message, pointer) if malformed
    result = check_methods(captured, ["tools/list", "resources/subscribe"])
    msgspec.to_builtins(result)
    # {"unmet": [{"method": "resources/subscribe", "requires": "resources.subscribe",
    #             "side": "server", "reason": "..."}],
    #  "met": [{"method": "tools/list", "requires": "tools", "side": "server", ...}]}

`REQUIREMENTS` is the catalogue of every method of the protocol, both
directions, requests and notifications: who sends it, whose declaration gates
it (`side`), which capability path (`requires`), and the protocol revisions
that have it. A method the *server* sends (`sampling/createMessage`,
`roots/list`, `elicitation/create`) is gated by the *client's* capabilities,
which a server's `initialize` result never declares: the check reports it
unmet with `side: "client"` rather than looking for it in the server's object.

Unknown method names raise `CapabilityError` (the HTTP layer answers 422): a
typo such as `tools/lists` must not pass a release gate, and reporting it as
"unmet" would blame the server for the caller's mistake. Pure, base install only.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import msgspec

from registry.compat.jsonvalues import a_json_type
from registry.pointers import escape

__all__ = [
    "REQUIREMENTS",
    "REVISIONS",
    "CapabilityError",
    "CapabilityState",
    "CapturedInitialize",
    "CheckResult",
    "MethodCheck",
    "Requirement",
    "capability_state",
    "check_methods",
    "parse_initialize",
]

# Every released protocol revision, oldest first (mcp_types.version.KNOWN_PROTOCOL_VERSIONS;
# a test keeps the two equal).
REVISIONS: Final[tuple[str, ...]] = (
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
)

Side = Literal["server", "client"]
Sender = Literal["client", "server", "both"]
Kind = Literal["request", "notification"]
CapabilityState = Literal["absent", "declared", "declined"]

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class CapabilityError(ValueError):
    """A malformed captured `initialize` result or check request (422).

    `pointer` is the JSON Pointer of the offending value in the document that
    was given ("" for the whole document; `/methods/2` for a check request).
    """

    def __init__(self, message: str, pointer: str = "") -> None:
        self.message = message
        self.pointer = pointer
        super().__init__(f"{pointer}: {message}" if pointer else message)


# -- the catalogue -------------------------------------------------------------


class Requirement(msgspec.Struct, frozen=True, kw_only=True):
    """What a method needs. `capability` is a dotted path into the capability
    object of `side` (None: no capability, e.g. `ping`); `sender` is who sends
    it; the method exists from revision `since` up to, not including, `until`."""

    method: str
    kind: Kind
    sender: Sender
    side: Side
    capability: str | None
    since: str = REVISIONS[0]
    until: str | None = None

    def in_revision(self, revision: str) -> bool:
        return self.since <= revision and (self.until is None or revision < self.until)


def _catalogue(*rows: Requirement) -> Mapping[str, Requirement]:
    return {row.method: row for row in rows}


_HANDSHAKE_END = "2026-07-28"  # initialize/ping/subscribe pair removed; server/discover added
_TASKS = "2025-11-25"

REQUIREMENTS: Final[Mapping[str, Requirement]] = _catalogue(
    # -- requests a client sends; the server's declaration gates them
    Requirement(
        method="initialize",
        kind="request",
        sender="client",
        side="server",
        capability=None,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="ping",
        kind="request",
        sender="both",
        side="server",
        capability=None,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="server/discover",
        kind="request",
        sender="client",
        side="server",
        capability=None,
        since=_HANDSHAKE_END,
    ),
    Requirement(
        method="subscriptions/listen",
        kind="request",
        sender="client",
        side="server",
        capability=None,
        since=_HANDSHAKE_END,
    ),
    Requirement(
        method="tools/list", kind="request", sender="client", side="server", capability="tools"
    ),
    Requirement(
        method="tools/call", kind="request", sender="client", side="server", capability="tools"
    ),
    Requirement(
        method="resources/list",
        kind="request",
        sender="client",
        side="server",
        capability="resources",
    ),
    Requirement(
        method="resources/read",
        kind="request",
        sender="client",
        side="server",
        capability="resources",
    ),
    Requirement(
        method="resources/templates/list",
        kind="request",
        sender="client",
        side="server",
        capability="resources",
    ),
    Requirement(
        method="resources/subscribe",
        kind="request",
        sender="client",
        side="server",
        capability="resources.subscribe",
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="resources/unsubscribe",
        kind="request",
        sender="client",
        side="server",
        capability="resources.subscribe",
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="prompts/list", kind="request", sender="client", side="server", capability="prompts"
    ),
    Requirement(
        method="prompts/get", kind="request", sender="client", side="server", capability="prompts"
    ),
    Requirement(
        method="completion/complete",
        kind="request",
        sender="client",
        side="server",
        capability="completions",
    ),
    Requirement(
        method="logging/setLevel",
        kind="request",
        sender="client",
        side="server",
        capability="logging",
        until=_HANDSHAKE_END,
    ),
    # Tasks (2025-11-25, experimental; moved out of the core protocol into the
    # `io.modelcontextprotocol/tasks` extension in 2026-07-28). Either side may
    # send them; the catalogue answers for a client asking a server.
    Requirement(
        method="tasks/get",
        kind="request",
        sender="both",
        side="server",
        capability="tasks",
        since=_TASKS,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="tasks/result",
        kind="request",
        sender="both",
        side="server",
        capability="tasks",
        since=_TASKS,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="tasks/list",
        kind="request",
        sender="both",
        side="server",
        capability="tasks.list",
        since=_TASKS,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="tasks/cancel",
        kind="request",
        sender="both",
        side="server",
        capability="tasks.cancel",
        since=_TASKS,
        until=_HANDSHAKE_END,
    ),
    # -- requests a server sends; the client's declaration gates them
    Requirement(
        method="sampling/createMessage",
        kind="request",
        sender="server",
        side="client",
        capability="sampling",
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="roots/list",
        kind="request",
        sender="server",
        side="client",
        capability="roots",
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="elicitation/create",
        kind="request",
        sender="server",
        side="client",
        capability="elicitation",
        since="2025-06-18",
        until=_HANDSHAKE_END,
    ),
    # -- notifications a client expects from a server
    Requirement(
        method="notifications/tools/list_changed",
        kind="notification",
        sender="server",
        side="server",
        capability="tools.listChanged",
    ),
    Requirement(
        method="notifications/resources/list_changed",
        kind="notification",
        sender="server",
        side="server",
        capability="resources.listChanged",
    ),
    Requirement(
        method="notifications/resources/updated",
        kind="notification",
        sender="server",
        side="server",
        capability="resources.subscribe",
    ),
    Requirement(
        method="notifications/prompts/list_changed",
        kind="notification",
        sender="server",
        side="server",
        capability="prompts.listChanged",
    ),
    Requirement(
        method="notifications/message",
        kind="notification",
        sender="server",
        side="server",
        capability="logging",
    ),
    Requirement(
        method="notifications/tasks/status",
        kind="notification",
        sender="both",
        side="server",
        capability="tasks",
        since=_TASKS,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="notifications/subscriptions/acknowledged",
        kind="notification",
        sender="server",
        side="server",
        capability=None,
        since=_HANDSHAKE_END,
    ),
    # URL-mode elicitation finished: only to a client that declared `elicitation.url`.
    Requirement(
        method="notifications/elicitation/complete",
        kind="notification",
        sender="server",
        side="client",
        capability="elicitation.url",
        since="2025-11-25",
        until=_HANDSHAKE_END,
    ),
    # -- notifications of the session itself, or from the client
    Requirement(
        method="notifications/initialized",
        kind="notification",
        sender="client",
        side="server",
        capability=None,
        until=_HANDSHAKE_END,
    ),
    Requirement(
        method="notifications/cancelled",
        kind="notification",
        sender="both",
        side="server",
        capability=None,
    ),
    Requirement(
        method="notifications/progress",
        kind="notification",
        sender="both",
        side="server",
        capability=None,
    ),
    Requirement(
        method="notifications/roots/list_changed",
        kind="notification",
        sender="client",
        side="client",
        capability="roots.listChanged",
        until=_HANDSHAKE_END,
    ),
)

# Capabilities a revision cannot declare at all (added later in the spec).
_CAPABILITY_SINCE: Final[Mapping[str, str]] = {"completions": "2025-03-26"}


# -- the captured document -----------------------------------------------------


class CapturedInitialize(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A server's `initialize` result, as captured from the wire (seed 004's fixture)."""

    protocolVersion: str
    capabilities: dict[str, Any]
    serverInfo: dict[str, Any]
    instructions: str | None = None


# The known structure of a server's capability object. A shape is "bool", "object"
# (any object; its keys are open), "objects" (an object whose values are objects),
# or a dict naming the known sub-keys (other sub-keys are open: the spec says
# capability objects are "not a closed set").
_Shape = str | dict[str, Any]
_SERVER_SHAPE: Final[dict[str, _Shape]] = {
    "experimental": "objects",
    "extensions": "objects",
    "logging": "object",
    "completions": "object",
    "prompts": {"listChanged": "bool"},
    "resources": {"subscribe": "bool", "listChanged": "bool"},
    "tools": {"listChanged": "bool"},
    "tasks": {
        "list": "object",
        "cancel": "object",
        "requests": {"tools": {"call": "object"}},
    },
}


def _check_shape(value: Any, shape: _Shape, pointer: str, name: str) -> None:
    if shape == "bool":
        if not isinstance(value, bool):
            raise CapabilityError(f"`{name}` must be a boolean, not {a_json_type(value)}", pointer)
        return
    if not isinstance(value, Mapping):
        hint = " (use {} to declare the feature)" if value is True else ""
        raise CapabilityError(
            f"`{name}` must be an object, not {a_json_type(value)}{hint}", pointer
        )
    if shape == "objects":
        for key, item in value.items():
            if not isinstance(item, Mapping):
                raise CapabilityError(
                    f"`{name}.{key}` must be an object, not {a_json_type(item)}",
                    f"{pointer}/{escape(key)}",
                )
        return
    if isinstance(shape, dict):
        for key, sub in shape.items():
            if key in value:
                _check_shape(value[key], sub, f"{pointer}/{escape(key)}", f"{name}.{key}")


def _check_revision(value: Any, pointer: str) -> str:
    if not isinstance(value, str):
        raise CapabilityError(
            f"`protocolVersion` must be a string, not {a_json_type(value)}", pointer
        )
    if not _DATE.fullmatch(value):
        raise CapabilityError(
            f"`protocolVersion` {value!r} is not a revision date (YYYY-MM-DD)", pointer
        )
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        raise CapabilityError(
            f"`protocolVersion` {value!r} is not a calendar date", pointer
        ) from None
    return value


def parse_initialize(raw: bytes | str | Mapping[str, Any]) -> CapturedInitialize:
    """Validate a captured `initialize` result (JSON text or parsed) and return it.

    A whole JSON-RPC response (`{"jsonrpc": "2.0", "id": .., "result": {..}}`)
    is accepted too: its `result` is read, and pointers then start at `/result`.
    Keys other than the four below (`_meta`, ...) are dropped; unknown
    capability keys are kept as they are (the capability set is open).
    """
    document: Any = raw
    if isinstance(raw, bytes | str):
        try:
            document = msgspec.json.decode(raw)
        except msgspec.DecodeError as exc:
            raise CapabilityError(f"not JSON: {exc}") from None
    if not isinstance(document, Mapping):
        raise CapabilityError(f"an initialize result is a JSON object, not {a_json_type(document)}")
    base = ""
    if "jsonrpc" in document and "result" in document:
        document, base = document["result"], "/result"
        if not isinstance(document, Mapping):
            raise CapabilityError(
                f"an initialize result is a JSON object, not {a_json_type(document)}", base
            )

    for field in ("protocolVersion", "capabilities", "serverInfo"):
        if field not in document:
            raise CapabilityError(f"`{field}` is required", base)
    revision = _check_revision(document["protocolVersion"], f"{base}/protocolVersion")

    capabilities = document["capabilities"]
    pointer = f"{base}/capabilities"
    if not isinstance(capabilities, Mapping):
        raise CapabilityError(
            f"`capabilities` must be an object, not {a_json_type(capabilities)}", pointer
        )
    for key, shape in _SERVER_SHAPE.items():
        if key in capabilities:
            _check_shape(capabilities[key], shape, f"{pointer}/{escape(key)}", key)

    info = document["serverInfo"]
    pointer = f"{base}/serverInfo"
    if not isinstance(info, Mapping):
        raise CapabilityError(f"`serverInfo` must be an object, not {a_json_type(info)}", pointer)
    for field in ("name", "version"):
        if field not in info:
            raise CapabilityError(f"`serverInfo.{field}` is required", pointer)
        if not isinstance(info[field], str):
            raise CapabilityError(
                f"`serverInfo.{field}` must be a string, not {a_json_type(info[field])}",
                f"{pointer}/{field}",
            )

    instructions = document.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise CapabilityError(
            f"`instructions` must be a string, not {a_json_type(instructions)}",
            f"{base}/instructions",
        )
    return CapturedInitialize(
        protocolVersion=revision,
        capabilities=dict(capabilities),
        serverInfo=dict(info),
        instructions=instructions,
    )


# -- the check -----------------------------------------------------------------


class MethodCheck(msgspec.Struct, frozen=True, kw_only=True):
    """One method's answer: `requires` is the capability path (None: none needed),
    `side` whose capability object holds it, `reason` a sentence for people."""

    method: str
    requires: str | None
    side: Side
    reason: str


class CheckResult(msgspec.Struct, frozen=True, kw_only=True):
    """`unmet` and `met` keep the order of the methods asked (duplicates once)."""

    unmet: list[MethodCheck]
    met: list[MethodCheck]

    @property
    def ok(self) -> bool:
        return not self.unmet


def capability_state(capabilities: Mapping[str, Any], path: str) -> CapabilityState:
    """The three-state reading of a dotted capability path.

    `absent`: some key on the path is missing; `declared`: the value is an
    object (`{}` included) or `true`; `declined`: the value is `false` (or
    anything else that is neither an object nor `true`).
    """
    node: Any = capabilities
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return "absent"
        node = node[key]
    if node is True or isinstance(node, Mapping):
        return "declared"
    return "declined"


def _revision_of(protocol_version: str) -> str | None:
    """The known revision whose rules apply: the newest one not after it."""
    known = [r for r in REVISIONS if r <= protocol_version]
    return known[-1] if known else None


def _answer(captured: CapturedInitialize, req: Requirement) -> tuple[bool, str]:
    method, path = req.method, req.capability
    revision = _revision_of(captured.protocolVersion)
    if revision is not None and not req.in_revision(revision):
        change = f"added in {req.since}" if revision < req.since else f"removed in {req.until}"
        return False, (f"protocol revision {captured.protocolVersion} has no `{method}` ({change})")
    if path is None:
        return True, f"`{method}` needs no capability"
    if req.side == "client":
        return False, (
            f"`{method}` depends on the client's `{path}` capability, not the server's: "
            f"a server's initialize result does not declare it"
        )
    state = capability_state(captured.capabilities, path)
    if state == "declared":
        return True, f"server declared `{path}`"
    if state == "declined":
        return False, f"server declared `{path}: false`"
    parent, _, leaf = path.rpartition(".")
    if parent and capability_state(captured.capabilities, parent) == "declared":
        return False, (
            f"server declared `{parent}` without `{leaf}`: the plain feature does not "
            f"promise its refinements"
        )
    top = path.split(".")[0]
    since = _CAPABILITY_SINCE.get(top)
    if since is not None and captured.protocolVersion < since:
        return False, (
            f"server did not declare `{top}` (revision {captured.protocolVersion} predates "
            f"that capability, so support cannot be confirmed from the declaration)"
        )
    return False, f"server did not declare `{top}`"


def check_methods(captured: CapturedInitialize, methods: Sequence[str]) -> CheckResult:
    """Which of `methods` the captured server declaration allows (seed 004's set-difference).

    Raises CapabilityError naming every unknown or non-string method, with the
    pointer (`/methods/i`) of the first.
    """
    if isinstance(methods, str | bytes) or not isinstance(methods, Sequence):
        raise CapabilityError("`methods` must be an array of method names", "/methods")
    unknown: list[tuple[int, str]] = []
    for index, method in enumerate(methods):
        if not isinstance(method, str):
            raise CapabilityError(
                f"a method name is a string, not {a_json_type(method)}", f"/methods/{index}"
            )
        if method not in REQUIREMENTS:
            unknown.append((index, method))
    if unknown:
        names = ", ".join(f"`{m}`" for _, m in unknown)
        noun = "method" if len(unknown) == 1 else "methods"
        raise CapabilityError(f"unknown MCP {noun}: {names}", f"/methods/{unknown[0][0]}")

    unmet: list[MethodCheck] = []
    met: list[MethodCheck] = []
    for method in dict.fromkeys(methods):
        req = REQUIREMENTS[method]
        ok, reason = _answer(captured, req)
        entry = MethodCheck(method=method, requires=req.capability, side=req.side, reason=reason)
        (met if ok else unmet).append(entry)
    return CheckResult(unmet=unmet, met=met)
