"""Issue 31, item 1: a tool the namespace serves that the manifests no longer
hold is a breaking change (`tool-removed`, `tool-renamed` where the engine
pairs it) in `plan`, `apply` and `check`, online and offline, naming who still
calls it; `--retire-removed` retires it in the same bundle. Built from the
issue's shape: one release renamed tools (`add` to `get-sum`) and dropped
others, and `check` passed.

The verbs run in-process against a real registry (tests/test_pipeline.py's
harness); usage counts are reported as a gated server reports them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.cli import EXIT_BREAKING, EXIT_OK
from tests.test_pipeline import (
    Registry,
    online,
    registry,
    run,
    schema_checked,
    versions,
    write,
)

__all__ = ["registry"]  # tests/test_pipeline.py's live registry fixture


def manifest(name: str, description: str = "", **more: str) -> str:
    lines = [
        "namespace: everything",
        "tool:",
        f"  name: {name}",
        f"  description: {description or name}",
        "  inputSchema:",
        "    type: object",
        "    properties:",
        "      a: {type: number}",
        "      b: {type: number}",
        "    required: [a, b]",
    ]
    lines += [f"{key}: {value}" for key, value in more.items()]
    return "\n".join(lines) + "\n"


ECHO = """\
namespace: everything
tool:
  name: echo
  description: Echo a message.
  inputSchema:
    type: object
    properties:
      message: {type: string}
    required: [message]
"""


async def released(registry: Registry, tmp_path: Path) -> Path:
    """The namespace as first released: add, echo and print; and 1,204 calls of echo v1."""
    tools = tmp_path / "tools"
    write(tools, "add.yaml", manifest("add", "Adds two numbers."))
    write(tools, "echo.yaml", ECHO)
    write(tools, "print.yaml", manifest("print", "Prints two numbers."))
    created = await run("apply", str(tools), *online(registry), "--create-namespace", "everything")
    assert created.code == EXIT_OK, created
    report = {
        "server": "everything-1",
        "toolset": "sha256:" + "0" * 64,
        "counts": [{"tool": "echo", "version": 1, "decision": "accepted", "calls": 1204}],
    }
    answer = await registry.client.post("/v1/namespaces/everything/usage", json=report)
    assert answer.is_success, answer.text
    # the next release: add is get-sum now, echo is gone
    (tools / "add.yaml").unlink()
    (tools / "echo.yaml").unlink()
    write(tools, "get-sum.yaml", manifest("get-sum", "Adds two numbers."))
    return tools


async def test_check_fails_on_a_tool_gone_and_names_its_callers(
    registry: Registry, tmp_path: Path
) -> None:
    tools = await released(registry, tmp_path)
    checked = await run("check", str(tools), *online(registry))
    assert checked.code == EXIT_BREAKING, checked
    out = checked.out
    assert "everything/add (tool-renamed: renamed to get-sum)" in out
    assert 'the tool was renamed from "add" to "get-sum"; calls to "add" fail' in out
    assert "everything/echo (tool-removed: no longer held)" in out
    assert 'tool "echo" is no longer served; calls to it fail' in out
    assert "v1 (active) still called: 1,204 calls" in out and "by everything-1 (1,204)" in out
    assert (
        "decision needed: retire it (--retire-removed, or keep its manifest with retire: [1])"
        in out
    )
    verdict = out.rstrip().splitlines()[-1]
    assert verdict.startswith("check failed: 2 tools the registry serves no longer held")
    assert "everything/add renamed to get-sum, everything/echo removed" in verdict


async def test_json_and_github_say_the_same(registry: Registry, tmp_path: Path) -> None:
    tools = await released(registry, tmp_path)
    with schema_checked() as check:
        result = await run("plan", str(tools), *online(registry), "--format", "json")
        document = check(result.json)
    assert result.code == EXIT_BREAKING
    assert document["accepted"] is False
    assert [
        (r["tool"], r["change"]["kind"], r.get("renamed_to"), r["versions"])
        for r in document["removed"]
    ] == [("add", "tool-renamed", "get-sum", [1]), ("echo", "tool-removed", None, [1])]
    echo = document["removed"][1]
    assert echo["change"]["old"] == "echo" and "new" not in echo["change"]  # nothing after
    assert [c["calls"] for c in echo["callers"]] == [1204]
    github = await run("check", str(tools), *online(registry), "--format", "github")
    assert '::error title=tool-removed::everything/echo: tool "echo" is no longer served' in (
        github.out
    )
    assert "::error title=tool-renamed::everything/add" in github.out


async def test_apply_lands_nothing_while_a_tool_is_gone_undecided(
    registry: Registry, tmp_path: Path
) -> None:
    tools = await released(registry, tmp_path)
    applied = await run("apply", str(tools), *online(registry))
    assert applied.code == EXIT_BREAKING, applied
    assert (
        applied.out.rstrip()
        .splitlines()[-1]
        .startswith(
            "apply refused, nothing was applied: 2 tools the registry serves no longer held"
        )
    )
    assert await versions(registry, "everything", "get-sum") == []
    assert await versions(registry, "everything", "echo") == [(1, "active")]


async def test_retire_removed_retires_them_in_the_same_apply(
    registry: Registry, tmp_path: Path
) -> None:
    tools = await released(registry, tmp_path)
    checked = await run("check", str(tools), *online(registry), "--retire-removed")
    assert checked.code == EXIT_OK, checked
    assert "retired on purpose (--retire-removed): v1" in checked.out
    assert "retire v1" in checked.out  # the retirement the bundle carries
    applied = await run("apply", str(tools), *online(registry), "--retire-removed")
    assert applied.code == EXIT_OK, applied
    assert await versions(registry, "everything", "echo") == [(1, "retired")]
    assert await versions(registry, "everything", "add") == [(1, "retired")]
    assert await versions(registry, "everything", "get-sum") == [(1, "active")]
    again = await run("check", str(tools), *online(registry))
    assert again.code == EXIT_OK, again  # a retired tool is served no more: nothing is gone


async def test_a_manifest_kept_with_its_versions_retired_is_a_decision(
    registry: Registry, tmp_path: Path
) -> None:
    tools = await released(registry, tmp_path)
    write(tools, "echo.yaml", ECHO + "retire: [1]\n")
    write(tools, "add.yaml", manifest("add", "Adds two numbers.", retire="[1]"))
    checked = await run("check", str(tools), *online(registry))
    assert checked.code == EXIT_OK, checked
    assert "tool-removed" not in checked.out


async def test_an_offline_check_finds_them_in_the_saved_toolset(
    registry: Registry, tmp_path: Path
) -> None:
    tools = await released(registry, tmp_path)
    saved = tmp_path / "toolset.json"
    toolset = await registry.client.get("/v1/namespaces/everything/toolset")
    saved.write_text(json.dumps(toolset.json()))
    checked = await run("check", str(tools), "--against-file", str(saved))
    assert checked.code == EXIT_BREAKING, checked
    assert "everything/echo (tool-removed: no longer held)" in checked.out
    assert "still called" not in checked.out  # a saved toolset carries no usage
    retired = await run("check", str(tools), "--against-file", str(saved), "--retire-removed")
    assert retired.code == EXIT_OK, retired


@pytest.mark.parametrize("verb", ["plan", "check"])
async def test_a_namespace_the_registry_does_not_have_loses_nothing(
    registry: Registry, tmp_path: Path, verb: str
) -> None:
    tools = tmp_path / "tools"
    write(tools, "get-sum.yaml", manifest("get-sum"))
    create = ["--create-namespace", "everything"]
    result = await run(verb, str(tools), *online(registry), *create, "--format", "json")
    assert result.code == EXIT_OK, result
    assert result.json["removed"] == []
