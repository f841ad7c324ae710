"""`registry retire` and `registry usage` against a live registry, and their bad input.

The happy path (stale callers seen, a retirement refused then accepted) is
tests/e2e/test_usage_e2e.py; here: the exit codes and one-line errors.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from tests.api.conftest import ADMIN_TOKEN, Registry, registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS
from tests.serving import REGISTRY, env_with
from tests.test_cli_server import assert_one_line_error, run

TOOL = "/v1/namespaces/billing/tools/db.query"
__all__ = ["registry"]  # the live registry fixture of tests/api


async def deprecated_v1_called(client: httpx.AsyncClient, calls: int) -> None:
    """db.query v1 (seed 000's v3) deprecated behind v2, and `calls` of it reported by
    the server billing-7."""
    assert (await client.post(f"{TOOL}/versions", json={"definition": DB_QUERY_V3})).is_success
    body = {
        "definition": DB_QUERY_V4,
        "converters": [{"from": 1, "ops": V3_TO_V4_OPS}],
        "deprecate": [{"version": 1}],
    }
    assert (await client.post(f"{TOOL}/versions", json=body)).is_success
    report = {
        "server": "billing-7",
        "toolset": "sha256:" + "0" * 64,
        "counts": [{"tool": "db.query", "version": 1, "decision": "converted", "calls": calls}],
    }
    assert (await client.post("/v1/namespaces/billing/usage", json=report)).is_success


async def run_cli(_: object, *argv: str) -> tuple[int, str, str]:
    """The CLI as a subprocess (the registry under test logs to this process's stdout)."""
    process = await asyncio.create_subprocess_exec(
        *REGISTRY,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env_with(),
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (("retire", "billing", "db.query", "x1", "--url", "http://127.0.0.1:9"), ("'x1'",)),
        (("retire", "billing", "db.query", "1"), ("no registry URL",)),
        (("usage", "billing", "db.query", "--version", "0", "--url", "http://h"), ("'0'",)),
        (
            ("retire", "billing", "db.query", "1", "--url", "http://127.0.0.1:9"),
            ("http://127.0.0.1:9/v1/namespaces/billing/tools/db.query/versions/1/retire",),
        ),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], parts: tuple[str, ...]
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert_one_line_error(err, *parts)


def test_a_duration_that_is_not_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "retire", "billing", "db.query", "1", "--require-idle", "7 days")
    assert code == 2
    assert "is not a duration" in err and "Traceback" not in err


async def test_usage_and_retire_speak_to_the_registry(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    client = registry.client
    assert (await client.post(f"{TOOL}/versions", json={"definition": DB_QUERY_V3})).is_success
    common = ("--url", registry.url, "--token", ADMIN_TOKEN)

    code, out, err = await run_cli(capsys, "usage", "billing", "db.query", *common)
    assert (code, err) == (0, "")
    assert out.splitlines()[1] == "no calls in this window"

    code, out, err = await run_cli(
        capsys, "usage", "billing", "db.query", "--version", "v1", "--format", "json", *common
    )
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["version"], answer["state"], answer["calls"]) == (1, "active", 0)

    code, out, err = await run_cli(capsys, "usage", "billing", "nope", *common)
    assert code == 2
    assert_one_line_error(err, "HTTP 404", "billing/nope does not exist")

    # the current and only version: retiring it strands nothing, so it lands
    code, out, err = await run_cli(capsys, "retire", "billing", "db.query", "v1", *common)
    assert (code, err) == (0, "")
    assert out == "billing/db.query v1: retired\n"

    reader = await registry.token("billing:read")
    code, out, err = await run_cli(
        capsys, "retire", "billing", "db.query", "1", "--url", registry.url, "--token", reader
    )
    assert code == 2
    assert_one_line_error(err, "HTTP 403", "billing:publish")


async def test_a_retirement_refused_for_its_callers_exits_1_then_warns(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    client = registry.client
    await deprecated_v1_called(client, 12)
    common = ("--url", registry.url, "--token", ADMIN_TOKEN)

    code, out, err = await run_cli(
        capsys, "retire", "billing", "db.query", "1", "--require-idle", "7d", *common
    )
    assert (code, out) == (1, "")
    assert_one_line_error(err, "retirement refused: HTTP 409", "12 calls", "billing-7")

    code, out, err = await run_cli(capsys, "usage", "billing", "db.query", *common)
    assert code == 0, err
    assert "billing-7 (12)" in out and "v1: converted 12" in out

    code, out, err = await run_cli(capsys, "retire", "billing", "db.query", "1", *common)
    assert code == 0
    assert out == "billing/db.query v1: retired\n"
    assert_one_line_error(err, "warning: db.query v1 was called 12 times in the last 7d")

    code, out, err = await run_cli(capsys, "retire", "billing", "db.query", "9", *common)
    assert code == 2
    assert_one_line_error(err, "HTTP 404")


async def test_check_and_plan_say_who_still_calls_a_deprecated_version(
    registry: Registry, tmp_path: Path
) -> None:
    client = registry.client
    await deprecated_v1_called(client, 5)
    common = ("--url", registry.url, "--token", ADMIN_TOKEN)
    manifest = {"namespace": "billing", "tool": DB_QUERY_V4}
    (tmp_path / "db.json").write_text(json.dumps(manifest))

    code, out, err = await run_cli(None, "check", str(tmp_path), *common)
    assert code == 0, err
    assert "v1 (deprecated) still called: 5 calls" in out and "billing-7 (5)" in out

    (tmp_path / "db.json").write_text(json.dumps({**manifest, "retire": [1], "require_idle": "7d"}))
    code, out, err = await run_cli(None, "plan", str(tmp_path), *common)
    assert code == 1, (out, err)
    assert "retirement refused: db.query v1 is still called: 5 calls" in out
    assert out.rstrip().endswith(
        "plan refused: 1 retirement of a version still called (require_idle); "
        "nothing would be applied"
    )
    code, out, _ = await run_cli(None, "check", str(tmp_path), "--format", "github", *common)
    assert code == 1
    assert "::error file=" in out and "title=still called::billing/db.query" in out
    assert (await client.get(f"{TOOL}/versions/1")).json()["state"] == "deprecated"
