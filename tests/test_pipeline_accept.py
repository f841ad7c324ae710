"""Breaking changes accepted on purpose and namespace policies through manifests:
`registry check / plan / apply` against a real registry, every output format, offline."""

from __future__ import annotations

import json
from pathlib import Path

from registry.cli import EXIT_BREAKING, EXIT_OK, EXIT_USAGE
from registry.manifests import PolicyManifest, collect_bundle, collect_directory, load_document
from registry.policy.acceptance import KIND_NAMES, NamespacePolicy, Relaxation
from tests import test_pipeline
from tests.api.conftest import Registry
from tests.test_pipeline import (
    EXAMPLE_SEARCH,
    SEARCH_V1,
    online,
    position,
    run,
    save_toolset,
    schema_checked,
    versions,
    write,
)

registry = test_pipeline.registry  # the fixture: a registry with no namespace yet

LIMIT_DEFAULT = "/inputSchema/properties/limit/default"
REQUIRED = "/inputSchema/required"
REASON_DEFAULT = "20 is what the old server did anyway"
REASON_REQUIRED = "every caller already sends filters"
# seed 002's v2 with no converter: both of its breaks accepted instead
SEARCH_V2 = EXAMPLE_SEARCH.split("converters:", 1)[0]
ACCEPT = f"""\
accept:
  - kind: default-added
    path: {LIMIT_DEFAULT}
    reason: {REASON_DEFAULT}
  - kind: required-added
    path: {REQUIRED}
    reason: {REASON_REQUIRED}
"""
RELAX = """\
namespace: search
policy:
  relax:
    - kind: default-added
      tool: search
      reason: limits were always twenty
"""


async def _search_v1(registry: Registry, tools: Path) -> Path:
    path = write(tools, "search/search.yaml", SEARCH_V1)
    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_OK, applied
    return path


async def test_check_reports_accepted_changes_in_every_format(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await _search_v1(registry, tools)
    path.write_text(SEARCH_V2)
    refused = await run("check", str(tools), *online(registry))
    assert refused.code == EXIT_BREAKING, refused
    path.write_text(SEARCH_V2 + ACCEPT)

    text = await run("check", str(tools), *online(registry))
    assert text.code == EXIT_OK, text
    assert "default-added" in text.out and "(accepted)" in text.out
    assert (
        f"accepted: default-added at {LIMIT_DEFAULT} (breaking for callers of v1; accepted on "
        f"purpose by the manifest): {REASON_DEFAULT}"
    ) in text.out
    assert f"required-added at {REQUIRED}" in text.out and REASON_REQUIRED in text.out
    assert "(no decision)" not in text.out
    assert text.out.rstrip().endswith("2 breaking changes accepted")

    with schema_checked() as check:
        answer = check((await run("check", str(tools), *online(registry), "--format", "json")).json)
    (plan,) = answer["tools"]
    assert [(a["kind"], a["source"], a["reason"]) for a in plan["acceptances"]] == [
        ("default-added", "request", REASON_DEFAULT),
        ("required-added", "request", REASON_REQUIRED),
    ]

    github = await run("check", str(tools), *online(registry), "--format", "github")
    assert github.code == EXIT_OK, github
    warnings = [line for line in github.out.splitlines() if "(accepted)" in line]
    assert len(warnings) == 2, github.out
    line, column = position(SEARCH_V2 + ACCEPT, "kind: default-added", "kind")
    assert warnings[0].startswith(
        f"::warning file={path},line={line},col={column},title=default-added (accepted)::"
    ), warnings[0]
    assert REASON_DEFAULT in warnings[0]
    assert "::error" not in github.out

    markdown = await run("check", str(tools), *online(registry), "--format", "markdown")
    assert "### Accepted on purpose" in markdown.out
    assert (
        f"| `search/search` | `default-added` | `{LIMIT_DEFAULT}` | v1 | manifest "
        f"| {REASON_DEFAULT} |"
    ) in markdown.out
    assert "**breaking** (accepted)" in markdown.out

    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_OK, applied
    assert await versions(registry, "search", "search") == [(1, "active"), (2, "active")]
    stored = (await registry.client.get("/v1/namespaces/search/tools/search/versions/2")).json()
    assert {a["reason"] for a in stored["acceptances"]} == {REASON_DEFAULT, REASON_REQUIRED}
    # re-applying: the definition is stored, its `accept` is not read again
    again = await run("apply", str(tools), *online(registry))
    assert again.code == EXIT_OK and "no changes" in again.out, again


async def test_a_mistyped_acceptance_fails_the_check_at_its_line(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await _search_v1(registry, tools)
    text = SEARCH_V2 + ACCEPT.replace(LIMIT_DEFAULT, "/inputSchema/properties/limit")
    path.write_text(text)
    answer = await run("check", str(tools), *online(registry))
    assert answer.code == EXIT_USAGE, answer
    line, column = position(text, "- kind: default-added", "kind")
    assert f"(acceptance-unmatched): {path}:{line}:{column}: /accept/0:" in answer.err
    assert f"default-added at {LIMIT_DEFAULT}" in answer.err  # names what it could be
    # a kind that does not exist is refused by the manifest schema, before any network
    path.write_text(SEARCH_V2 + ACCEPT.replace("kind: default-added", "kind: defualt-added"))
    typo = await run("check", str(tools), *online(registry))
    assert typo.code == EXIT_USAGE, typo
    assert "did you mean 'default-added'" in typo.err


async def test_a_policy_manifest_is_planned_applied_and_relaxes_its_tool(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await _search_v1(registry, tools)
    policy = write(tools, "search/_policy.yaml", RELAX)
    path.write_text(SEARCH_V2.replace("required: [query, filters]", "required: [query]"))

    with schema_checked() as check:
        planned = await run("plan", str(tools), *online(registry), "--format", "json")
        answer = check(planned.json)
    assert planned.code == EXIT_OK, planned
    (step,) = answer["policies"]
    assert (step["namespace"], step["action"], step["source"]) == ("search", "set", str(policy))
    (acceptance,) = answer["tools"][0]["acceptances"]
    assert acceptance["source"] == "policy"
    assert "limits were always twenty" in acceptance["reason"]

    text = await run("plan", str(tools), *online(registry))
    assert (
        "namespace search: policy set: relax default-added for search (limits were always twenty)"
    ) in text.out
    assert "accepted on purpose by the namespace policy" in text.out

    # setting a policy needs admin: a publisher's plan says so and its apply changes nothing
    publisher = await registry.token("search:publish")
    as_publisher = ["--url", registry.url, "--token", publisher]
    refused = await run("plan", str(tools), *as_publisher)
    assert refused.code == EXIT_BREAKING, refused
    assert "setting the policy of search needs search:admin" in refused.out
    not_applied = await run("apply", str(tools), *as_publisher)
    assert not_applied.code == EXIT_USAGE, not_applied
    assert "(forbidden)" in not_applied.err
    assert await versions(registry, "search", "search") == [(1, "active")]

    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_OK, applied
    stored = (await registry.client.get("/v1/namespaces/search/policy")).json()
    assert stored["relax"][0]["reason"] == "limits were always twenty"
    assert await versions(registry, "search", "search") == [(1, "active"), (2, "active")]
    # now in effect: a publisher's plan of the same directory is accepted
    again = await run("plan", str(tools), *as_publisher, "--format", "json")
    assert again.code == EXIT_OK, again
    assert again.json["policies"][0]["action"] == "unchanged"


async def test_a_policy_manifest_is_checked_like_any_manifest(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    write(tools, "a.yaml", "namespace: search\npolicy:\n  gating: false\n")
    write(
        tools,
        "b.yaml",
        RELAX.replace("policy:", "tool: {name: x, inputSchema: {type: object}}\npolicy:"),
    )
    answer = await run("check", str(tools), "--url", "http://127.0.0.1:9")
    assert answer.code == EXIT_USAGE, answer
    lines = answer.err.splitlines()
    assert lines[0].startswith(f"registry: {tools / 'a.yaml'}:3:3: /policy/reason:"), lines
    assert "gating off needs a reason" in lines[0]
    assert "a namespace policy manifest declares no tool" in lines[1], lines


async def test_check_offline_plans_under_the_policy_of_the_directory(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await _search_v1(registry, tools)
    toolset = await save_toolset(registry, "search", tmp_path / "toolset.json")
    offline = ["--against-file", str(toolset), "--format", "json"]
    path.write_text(SEARCH_V2.replace("required: [query, filters]", "required: [query]"))
    strict = await run("check", str(tools), *offline)
    assert strict.code == EXIT_BREAKING, strict
    write(tools, "search/_policy.yaml", RELAX)
    relaxed = await run("check", str(tools), *offline)
    assert relaxed.code == EXIT_OK, relaxed
    assert relaxed.json["tools"][0]["acceptances"][0]["source"] == "policy"
    # an explicit acceptance is checked offline too, against the saved versions
    (tools / "search" / "_policy.yaml").unlink()
    path.write_text(SEARCH_V2 + ACCEPT)
    accepted = await run("check", str(tools), *offline)
    online_answer = await run("check", str(tools), *online(registry), "--format", "json")
    assert (accepted.code, online_answer.code) == (EXIT_OK, EXIT_OK), (accepted, online_answer)
    assert accepted.json["tools"] == online_answer.json["tools"]


async def test_a_gating_off_toolset_checks_offline_as_the_registry_does(
    registry: Registry, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    path = await _search_v1(registry, tools)
    off = {"gating": False, "reason": "prototype"}
    assert (await registry.client.put("/v1/namespaces/search/policy", json=off)).is_success
    toolset = await save_toolset(registry, "search", tmp_path / "toolset.json")
    assert json.loads(toolset.read_bytes())["gating"] is False
    path.write_text(SEARCH_V2)
    offline = await run("check", str(tools), "--against-file", str(toolset))
    assert offline.code == EXIT_OK, offline
    assert "gating is off" in offline.out
    here = await run("check", str(tools), *online(registry))
    assert here.code == EXIT_OK, here


def test_the_manifest_schema_names_every_kind_of_change() -> None:
    schema = json.loads((Path(__file__).parents[1] / "schemas/manifest.schema.json").read_text())
    assert set(schema["$defs"]["kind"]["enum"]) == KIND_NAMES


def test_a_policy_manifest_loads_and_only_bundle_readers_take_it(tmp_path: Path) -> None:
    path = write(tmp_path, "search/_policy.yaml", RELAX)
    loaded = load_document(path)
    assert isinstance(loaded, PolicyManifest)
    assert loaded.policy == NamespacePolicy(
        relax=[Relaxation(kind="default-added", tool="search", reason="limits were always twenty")]
    )
    assert loaded.to_body().source == str(path)
    manifests, policies, errors = collect_bundle(tmp_path)
    assert (manifests, [p.path for p in policies], errors) == ([], [str(path)], [])
    # the console's upload and `load_manifest` read tool manifests: a policy is named as one
    _, refused = collect_directory(tmp_path)
    assert [e.pointer for e in refused] == ["/policy"]
    assert "a namespace policy manifest" in refused[0].message
    write(tmp_path, "other/_policy.yaml", RELAX)
    _, _, twice = collect_bundle(tmp_path)
    assert ["already declared" in e.message for e in twice] == [True]
