"""Capability fixtures (seed 004): parsing a captured `initialize` result and the
three-state check of the methods a client emits against it."""

from __future__ import annotations

import copy
import functools
import importlib
import pkgutil
import typing
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.policy.capabilities import (
    REQUIREMENTS,
    REVISIONS,
    CapabilityError,
    CapturedInitialize,
    capability_state,
    check_methods,
    parse_initialize,
)

SERVER_INFO = {"name": "docs-server", "version": "1.4.0"}


def captured(capabilities: dict[str, Any], revision: str = "2025-06-18") -> CapturedInitialize:
    return parse_initialize(
        {"protocolVersion": revision, "capabilities": capabilities, "serverInfo": SERVER_INFO}
    )


def unmet(
    capabilities: dict[str, Any], methods: list[str], revision: str = "2025-06-18"
) -> list[str]:
    return [c.method for c in check_methods(captured(capabilities, revision), methods).unmet]


# -- seed 004 ------------------------------------------------------------------

# The seed's REQUIRES table, verbatim.
SEED_REQUIRES = {
    "tools/list": "tools",
    "tools/call": "tools",
    "resources/read": "resources",
    "resources/subscribe": "resources.subscribe",
    "prompts/get": "prompts",
    "completion/complete": "completions",
}
# "Fixture captured from the partner's server, checked into the repo."
SEED_CAPS = {"tools": {"listChanged": True}, "resources": {}}
SEED_EMITTED = ["tools/list", "tools/call", "resources/read", "resources/subscribe"]


def test_seed_004_fixture_fails_on_resources_subscribe_only() -> None:
    result = check_methods(captured(SEED_CAPS), SEED_EMITTED)

    assert [c.method for c in result.unmet] == ["resources/subscribe"]
    assert [c.method for c in result.met] == ["tools/list", "tools/call", "resources/read"]
    (miss,) = result.unmet
    assert miss.requires == "resources.subscribe"
    assert miss.side == "server"
    assert "`resources` without `subscribe`" in miss.reason
    assert not result.ok


@pytest.mark.parametrize(("method", "path"), sorted(SEED_REQUIRES.items()))
def test_catalogue_agrees_with_seed_004(method: str, path: str) -> None:
    assert REQUIREMENTS[method].capability == path
    assert REQUIREMENTS[method].side == "server"


def test_resources_empty_object_counts_as_declared() -> None:
    # The falsy-{} trap of seed 004: `resources: {}` is a real declaration.
    caps: dict[str, Any] = {"resources": {}}
    assert capability_state(caps, "resources") == "declared"
    result = check_methods(
        captured(caps), ["resources/list", "resources/read", "resources/templates/list"]
    )
    assert result.unmet == []
    assert [c.reason for c in result.met] == ["server declared `resources`"] * 3


def test_answer_as_json() -> None:
    result = check_methods(captured(SEED_CAPS), ["resources/subscribe", "ping", "tools/call"])
    assert msgspec.to_builtins(result) == {
        "unmet": [
            {
                "method": "resources/subscribe",
                "requires": "resources.subscribe",
                "side": "server",
                "reason": "server declared `resources` without `subscribe`: the plain feature "
                "does not promise its refinements",
            }
        ],
        "met": [
            {
                "method": "ping",
                "requires": None,
                "side": "server",
                "reason": "`ping` needs no capability",
            },
            {
                "method": "tools/call",
                "requires": "tools",
                "side": "server",
                "reason": "server declared `tools`",
            },
        ],
    }


# -- three states --------------------------------------------------------------


@pytest.mark.parametrize(
    ("capabilities", "path", "state"),
    [
        ({}, "resources", "absent"),
        ({"resources": {}}, "resources", "declared"),
        ({"resources": {"subscribe": True}}, "resources", "declared"),
        ({}, "resources.subscribe", "absent"),
        ({"resources": {}}, "resources.subscribe", "absent"),
        ({"resources": {"listChanged": True}}, "resources.subscribe", "absent"),
        ({"resources": {"subscribe": False}}, "resources.subscribe", "declined"),
        ({"resources": {"subscribe": True}}, "resources.subscribe", "declared"),
        ({"tasks": {}}, "tasks.list", "absent"),
        ({"tasks": {"list": {}}}, "tasks.list", "declared"),
        ({"tasks": {"requests": {"tools": {"call": {}}}}}, "tasks.requests.tools.call", "declared"),
    ],
)
def test_capability_state(capabilities: dict[str, Any], path: str, state: str) -> None:
    assert capability_state(capabilities, path) == state


@pytest.mark.parametrize(
    ("capabilities", "met", "reason"),
    [
        ({}, False, "server did not declare `resources`"),
        ({"tools": {}}, False, "server did not declare `resources`"),
        ({"resources": {}}, False, "server declared `resources` without `subscribe`"),
        (
            {"resources": {"listChanged": True}},
            False,
            "server declared `resources` without `subscribe`",
        ),
        (
            {"resources": {"subscribe": False}},
            False,
            "server declared `resources.subscribe: false`",
        ),
        ({"resources": {"subscribe": True}}, True, "server declared `resources.subscribe`"),
    ],
)
def test_subscribe_three_states(capabilities: dict[str, Any], met: bool, reason: str) -> None:
    methods = ["resources/subscribe", "resources/unsubscribe", "notifications/resources/updated"]
    result = check_methods(captured(capabilities), methods)
    answers = result.met if met else result.unmet
    assert [c.method for c in answers] == methods
    assert all(c.reason.startswith(reason) for c in answers)
    assert all(c.requires == "resources.subscribe" for c in answers)


# Per capability: which of these methods each declaration allows.
TABLE_METHODS = [
    "tools/list",
    "tools/call",
    "notifications/tools/list_changed",
    "prompts/list",
    "prompts/get",
    "notifications/prompts/list_changed",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "notifications/resources/list_changed",
    "resources/subscribe",
    "logging/setLevel",
    "notifications/message",
    "completion/complete",
]


@pytest.mark.parametrize(
    ("capabilities", "met"),
    [
        ({}, []),
        ({"tools": {}}, ["tools/list", "tools/call"]),
        ({"tools": {"listChanged": False}}, ["tools/list", "tools/call"]),
        (
            {"tools": {"listChanged": True}},
            ["tools/list", "tools/call", "notifications/tools/list_changed"],
        ),
        ({"prompts": {}}, ["prompts/list", "prompts/get"]),
        (
            {"prompts": {"listChanged": True}},
            ["prompts/list", "prompts/get", "notifications/prompts/list_changed"],
        ),
        ({"resources": {}}, ["resources/list", "resources/read", "resources/templates/list"]),
        (
            {"resources": {"listChanged": True, "subscribe": True}},
            [
                "resources/list",
                "resources/read",
                "resources/templates/list",
                "notifications/resources/list_changed",
                "resources/subscribe",
            ],
        ),
        ({"logging": {}}, ["logging/setLevel", "notifications/message"]),
        ({"completions": {}}, ["completion/complete"]),
        # an unknown capability is kept but promises none of the known methods
        ({"x-search": {"fuzzy": True}}, []),
        # sub-keys never stand in for the parent's siblings
        ({"experimental": {"tools": {}}}, []),
    ],
)
def test_absent_empty_and_sub_keys(capabilities: dict[str, Any], met: list[str]) -> None:
    result = check_methods(captured(capabilities), TABLE_METHODS)
    assert [c.method for c in result.met] == met
    assert [c.method for c in result.unmet] == [m for m in TABLE_METHODS if m not in met]


@pytest.mark.parametrize(
    ("capabilities", "met"),
    [
        ({}, []),
        ({"tasks": {}}, ["tasks/get", "tasks/result", "notifications/tasks/status"]),
        (
            {"tasks": {"list": {}, "cancel": {}}},
            [
                "tasks/get",
                "tasks/result",
                "tasks/list",
                "tasks/cancel",
                "notifications/tasks/status",
            ],
        ),
    ],
)
def test_tasks_sub_capabilities_are_objects(capabilities: dict[str, Any], met: list[str]) -> None:
    methods = [
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "notifications/tasks/status",
    ]
    result = check_methods(captured(capabilities, "2025-11-25"), methods)
    assert [c.method for c in result.met] == met


def test_methods_needing_nothing_are_met_on_an_empty_declaration() -> None:
    result = check_methods(
        captured({}), ["ping", "initialize", "notifications/cancelled", "notifications/progress"]
    )
    assert result.unmet == []
    assert all(c.requires is None for c in result.met)


def test_order_kept_and_duplicates_once() -> None:
    result = check_methods(captured(SEED_CAPS), ["tools/call", "prompts/get", "tools/call"])
    assert [c.method for c in result.met] == ["tools/call"]
    assert [c.method for c in result.unmet] == ["prompts/get"]
    assert check_methods(captured(SEED_CAPS), []).ok


# -- client-side methods -------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "capability"),
    [
        ("sampling/createMessage", "sampling"),
        ("roots/list", "roots"),
        ("elicitation/create", "elicitation"),
        ("notifications/roots/list_changed", "roots.listChanged"),
        ("notifications/elicitation/complete", "elicitation.url"),
    ],
)
def test_client_side_methods_are_not_server_capabilities(method: str, capability: str) -> None:
    # Even a server object that (wrongly) carries the client's key does not satisfy them.
    caps = {"sampling": {}, "roots": {"listChanged": True}, "elicitation": {"url": {}}}
    result = check_methods(captured(caps, "2025-11-25"), [method])
    (answer,) = result.unmet
    assert answer.side == "client"
    assert answer.requires == capability
    assert f"client's `{capability}` capability" in answer.reason
    if REQUIREMENTS[method].kind == "request":
        assert REQUIREMENTS[method].sender == "server"


# -- protocol revisions --------------------------------------------------------


def test_a_method_the_revision_lacks_is_unmet() -> None:
    result = check_methods(captured({}, "2024-11-05"), ["elicitation/create"])
    assert result.unmet[0].reason == (
        "protocol revision 2024-11-05 has no `elicitation/create` (added in 2025-06-18)"
    )
    caps = {"resources": {"subscribe": True}}
    result = check_methods(captured(caps, "2026-07-28"), ["resources/subscribe", "resources/read"])
    assert [c.method for c in result.unmet] == ["resources/subscribe"]
    assert "(removed in 2026-07-28)" in result.unmet[0].reason
    assert unmet({"tasks": {"list": {}}}, ["tasks/list"], "2025-06-18") == ["tasks/list"]


def test_completions_before_the_capability_existed_fails_closed() -> None:
    (answer,) = check_methods(captured({}, "2024-11-05"), ["completion/complete"]).unmet
    assert "predates that capability" in answer.reason
    assert unmet({"completions": {}}, ["completion/complete"], "2024-11-05") == []


def test_unreleased_revisions_use_the_nearest_older_one() -> None:
    assert unmet({"resources": {}}, ["resources/read"], "2025-08-01") == []
    assert unmet({}, ["elicitation/create"], "2025-05-01") == ["elicitation/create"]
    assert (
        "added in 2025-06-18"
        in check_methods(captured({}, "2025-05-01"), ["elicitation/create"]).unmet[0].reason
    )
    # before the first revision no method is ruled out by date, only by declaration
    assert unmet({"tools": {}}, ["tools/list"], "2024-01-01") == []


# -- unknown methods -----------------------------------------------------------


def test_unknown_method_is_an_error_naming_it() -> None:
    with pytest.raises(CapabilityError) as caught:
        check_methods(captured(SEED_CAPS), ["tools/list", "tools/lists"])
    assert caught.value.pointer == "/methods/1"
    assert caught.value.message == "unknown MCP method: `tools/lists`"


def test_every_unknown_method_is_named() -> None:
    with pytest.raises(CapabilityError) as caught:
        check_methods(captured(SEED_CAPS), ["x/a", "tools/list", "x/b"])
    assert caught.value.pointer == "/methods/0"
    assert caught.value.message == "unknown MCP methods: `x/a`, `x/b`"


@pytest.mark.parametrize(
    ("methods", "pointer"),
    [(["tools/list", 3], "/methods/1"), ("tools/list", "/methods"), ([None], "/methods/0")],
)
def test_method_list_must_be_strings(methods: Any, pointer: str) -> None:
    with pytest.raises(CapabilityError) as caught:
        check_methods(captured(SEED_CAPS), methods)
    assert caught.value.pointer == pointer


# -- parsing the captured document ---------------------------------------------


def document(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {"listChanged": True}, "resources": {}},
        "serverInfo": dict(SERVER_INFO),
    }
    doc.update(changes)
    return doc


def caps(**capabilities: Any) -> dict[str, Any]:
    return document(capabilities=capabilities)


@pytest.mark.parametrize(
    ("raw", "pointer", "fragment"),
    [
        ([], "", "a JSON object, not an array"),
        (b"{not json", "", "not JSON"),
        ({"capabilities": {}, "serverInfo": SERVER_INFO}, "", "`protocolVersion` is required"),
        (document(protocolVersion=20250618), "/protocolVersion", "must be a string"),
        (document(protocolVersion="June 2025"), "/protocolVersion", "YYYY-MM-DD"),
        (document(protocolVersion="2025-13-40"), "/protocolVersion", "not a calendar date"),
        ({"protocolVersion": "2025-06-18", "serverInfo": SERVER_INFO}, "", "`capabilities`"),
        (document(capabilities=[]), "/capabilities", "must be an object, not an array"),
        (caps(resources=True), "/capabilities/resources", "not a boolean (use {}"),
        (caps(tools=None), "/capabilities/tools", "`tools` must be an object, not null"),
        (caps(prompts="yes"), "/capabilities/prompts", "not a string"),
        (caps(logging=True), "/capabilities/logging", "`logging` must be an object"),
        (caps(completions=[]), "/capabilities/completions", "not an array"),
        (
            caps(resources={"subscribe": "true"}),
            "/capabilities/resources/subscribe",
            "`resources.subscribe` must be a boolean, not a string",
        ),
        (
            caps(resources={"listChanged": 1}),
            "/capabilities/resources/listChanged",
            "`resources.listChanged` must be a boolean, not an integer",
        ),
        (
            caps(tools={"listChanged": None}),
            "/capabilities/tools/listChanged",
            "must be a boolean, not null",
        ),
        (caps(prompts={"listChanged": {}}), "/capabilities/prompts/listChanged", "boolean"),
        (caps(tasks={"list": True}), "/capabilities/tasks/list", "`tasks.list` must be an object"),
        (
            caps(tasks={"requests": {"tools": {"call": True}}}),
            "/capabilities/tasks/requests/tools/call",
            "`tasks.requests.tools.call` must be an object",
        ),
        (caps(experimental={"x": True}), "/capabilities/experimental/x", "`experimental.x`"),
        (
            caps(extensions={"io.modelcontextprotocol/tasks": True}),
            "/capabilities/extensions/io.modelcontextprotocol~1tasks",
            "must be an object",
        ),
        (document(serverInfo="srv"), "/serverInfo", "`serverInfo` must be an object"),
        (document(serverInfo={"name": "srv"}), "/serverInfo", "`serverInfo.version` is required"),
        (
            document(serverInfo={"name": 3, "version": "1"}),
            "/serverInfo/name",
            "`serverInfo.name` must be a string",
        ),
        (document(instructions=["read"]), "/instructions", "`instructions` must be a string"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": caps(resources=True)},
            "/result/capabilities/resources",
            "must be an object",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": "ok"}, "/result", "a JSON object"),
    ],
)
def test_bad_documents_name_the_pointer(raw: Any, pointer: str, fragment: str) -> None:
    with pytest.raises(CapabilityError) as caught:
        parse_initialize(raw)
    assert caught.value.pointer == pointer
    assert fragment in caught.value.message
    assert str(caught.value).startswith(f"{pointer}: " if pointer else caught.value.message)


def test_server_info_is_required() -> None:
    doc = document()
    del doc["serverInfo"]
    with pytest.raises(CapabilityError, match="`serverInfo` is required"):
        parse_initialize(doc)


def test_good_documents() -> None:
    doc = document(
        capabilities={
            "tools": {"listChanged": True},
            "resources": {},
            "experimental": {"x-trace": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
            "x-vendor": True,  # the capability set is open: unknown keys are kept
            "resources-extra": {"anything": [1]},
        },
        serverInfo={"name": "srv", "version": "2", "title": "Server"},
        instructions="Read before writing.",
        _meta={"trace": 1},
    )
    parsed = parse_initialize(doc)
    assert parsed.protocolVersion == "2025-06-18"
    assert parsed.capabilities == doc["capabilities"]
    assert parsed.serverInfo == {"name": "srv", "version": "2", "title": "Server"}
    assert parsed.instructions == "Read before writing."
    # the envelope of a captured JSON-RPC response and JSON text are read too
    envelope = {"jsonrpc": "2.0", "id": 0, "result": doc}
    assert parse_initialize(envelope) == parsed
    assert parse_initialize(msgspec.json.encode(doc)) == parsed
    assert parse_initialize(msgspec.json.encode(doc).decode()) == parsed
    # round trip; `instructions` is left out when absent
    assert parse_initialize(msgspec.json.encode(parsed)) == parsed
    plain = parse_initialize(document())
    assert "instructions" not in msgspec.to_builtins(plain)


def test_parsing_does_not_alias_the_input() -> None:
    doc = document()
    parsed = parse_initialize(doc)
    doc["capabilities"]["prompts"] = {}
    assert "prompts" not in parsed.capabilities


# -- the catalogue against the installed MCP SDK --------------------------------


@functools.cache
def _sdk() -> dict[str, dict[str, set[str]]]:
    """method -> {"senders": {"client"|"server"}, "revisions": {...}} from the SDK's types."""
    methods_mod = pytest.importorskip("mcp_types.methods")
    import mcp_types

    found: dict[str, dict[str, set[str]]] = {}

    def add(method: str, sender: str, revision: str | None) -> None:
        row = found.setdefault(method, {"senders": set(), "revisions": set()})
        row["senders"].add(sender)
        if revision is not None:
            row["revisions"].add(revision)

    for surface, sender in [
        (methods_mod.CLIENT_REQUESTS, "client"),
        (methods_mod.CLIENT_NOTIFICATIONS, "client"),
        (methods_mod.SERVER_REQUESTS, "server"),
        (methods_mod.SERVER_NOTIFICATIONS, "server"),
    ]:
        for method, revision in surface:
            add(method, sender, revision)
    # The per-revision schema modules also define what the surface maps leave out
    # (2025-11-25's tasks/*). Every `_v*` module is read, so a new one is too.
    for module_info in pkgutil.iter_modules(mcp_types.__path__):
        if not module_info.name.startswith("_v"):
            continue
        module = importlib.import_module(f"mcp_types.{module_info.name}")
        revision = module_info.name[2:].replace("_", "-")
        for union, sender in [
            ("ClientRequest", "client"),
            ("ClientNotification", "client"),
            ("ServerRequest", "server"),
            ("ServerNotification", "server"),
        ]:
            members = getattr(module, union, None)
            if members is None:
                continue
            for model in typing.get_args(members) or (members,):
                for method in typing.get_args(model.model_fields["method"].annotation):
                    add(method, sender, revision)
    for method in [*methods_mod.MONOLITH_REQUESTS, *methods_mod.MONOLITH_NOTIFICATIONS]:
        found.setdefault(method, {"senders": set(), "revisions": set()})
    return found


def test_revisions_are_the_sdk_revisions() -> None:
    version = pytest.importorskip("mcp_types.version")
    assert version.KNOWN_PROTOCOL_VERSIONS == REVISIONS


def test_every_sdk_client_request_method_is_catalogued() -> None:
    methods_mod = pytest.importorskip("mcp_types.methods")
    client_requests = {m for m, _ in methods_mod.CLIENT_REQUESTS} | set(
        methods_mod.SPEC_CLIENT_METHODS
    )
    client_requests |= {m for m, row in _sdk().items() if "client" in row["senders"]}
    assert client_requests - set(REQUIREMENTS) == set()


def test_every_sdk_method_is_catalogued_and_nothing_else() -> None:
    sdk = _sdk()
    assert set(sdk) - set(REQUIREMENTS) == set(), "new MCP methods: add them to REQUIREMENTS"
    assert set(REQUIREMENTS) - set(sdk) == set(), "catalogued methods the SDK does not know"


@pytest.mark.parametrize("method", sorted(REQUIREMENTS))
def test_catalogue_matches_the_sdk(method: str) -> None:
    row = _sdk()[method]
    req = REQUIREMENTS[method]
    senders = row["senders"]
    assert req.sender == ("both" if len(senders) == 2 else next(iter(senders)))
    assert {r for r in REVISIONS if req.in_revision(r)} == row["revisions"]
    if req.kind == "request":
        # who answers holds the capability; a method both sides send is catalogued
        # for a client asking a server
        assert req.side == ("client" if req.sender == "server" else "server")
        assert req.method.startswith("notifications/") is False
    else:
        assert req.method.startswith("notifications/")


def _resolves(model: Any, path: list[str]) -> bool:
    from pydantic import BaseModel

    key, rest = path[0], path[1:]
    for name, field in model.model_fields.items():
        if key not in (name, field.alias):
            continue
        inner = [a for a in typing.get_args(field.annotation) if a is not type(None)]
        target = inner[0] if inner else field.annotation
        if not rest:
            return True
        origin = typing.get_origin(target)
        if isinstance(target, type) and issubclass(target, BaseModel) and origin is None:
            return _resolves(target, rest)
        return False
    return False


@pytest.mark.parametrize(
    "method", sorted(m for m, r in REQUIREMENTS.items() if r.capability is not None)
)
def test_capability_paths_exist_in_the_sdk(method: str) -> None:
    mcp_types = pytest.importorskip("mcp_types")

    req = REQUIREMENTS[method]
    assert req.capability is not None
    model_name = "ServerCapabilities" if req.side == "server" else "ClientCapabilities"
    models = []
    for module_info in pkgutil.iter_modules(mcp_types.__path__):
        if module_info.name.startswith("_v"):
            module = importlib.import_module(f"mcp_types.{module_info.name}")
            models.append(getattr(module, model_name))
    assert any(_resolves(model, req.capability.split(".")) for model in models)


# -- monotonic: declaring more never takes a method away -------------------------

_optional = st.fixed_dictionaries
capabilities_strategy = _optional(
    {},
    optional={
        "tools": _optional({}, optional={"listChanged": st.booleans()}),
        "prompts": _optional({}, optional={"listChanged": st.booleans()}),
        "resources": _optional(
            {}, optional={"subscribe": st.booleans(), "listChanged": st.booleans()}
        ),
        "logging": st.just({}),
        "completions": st.just({}),
        "tasks": _optional(
            {},
            optional={
                "list": st.just({}),
                "cancel": st.just({}),
                "requests": _optional(
                    {}, optional={"tools": _optional({}, optional={"call": st.just({})})}
                ),
            },
        ),
        "experimental": st.dictionaries(st.sampled_from(["a", "b"]), st.just({}), max_size=2),
        "sampling": st.just({}),
    },
)
_BOOL_LEAVES = {"listChanged", "subscribe"}
ADDABLE = sorted(
    {r.capability for r in REQUIREMENTS.values() if r.capability is not None}
    | {"tasks.requests.tools.call", "x-vendor", "resources.x-vendor", "experimental.c"}
)


def _add(capabilities: dict[str, Any], path: str, flag: bool) -> dict[str, Any] | None:
    """A copy with the first missing key on `path` added, or None if `path` is all there."""
    keys = path.split(".")
    grown = copy.deepcopy(capabilities)
    node = grown
    for depth, key in enumerate(keys):
        if key not in node:
            value: Any = flag if keys[-1] in _BOOL_LEAVES else {}
            for inner in reversed(keys[depth + 1 :]):
                value = {inner: value}
            node[key] = value
            return grown
        node = node[key]
    return None


@settings(max_examples=150, deadline=None)
@given(
    capabilities=capabilities_strategy,
    path=st.sampled_from(ADDABLE),
    flag=st.booleans(),
    revision=st.sampled_from(REVISIONS),
)
def test_adding_a_capability_key_never_adds_an_unmet_method(
    capabilities: dict[str, Any], path: str, flag: bool, revision: str
) -> None:
    grown = _add(capabilities, path, flag)
    if grown is None:
        return
    methods = sorted(REQUIREMENTS)
    before = check_methods(captured(capabilities, revision), methods)
    after = check_methods(captured(grown, revision), methods)
    unmet_before = {c.method for c in before.unmet}
    unmet_after = {c.method for c in after.unmet}
    assert unmet_after <= unmet_before
    # every method is answered exactly once
    assert unmet_after.isdisjoint(c.method for c in after.met)
    assert len(after.met) + len(after.unmet) == len(methods)
