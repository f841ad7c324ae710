"""The everyday verbs against a live registry: history, show, diff on a registry,
deprecate, retire, alias, converter; their text and JSON, exit codes and one-line errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.api.conftest import ADMIN_TOKEN, Registry, registry
from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS
from tests.test_cli_server import assert_one_line_error, run
from tests.test_cli_usage import run_cli

TOOL = "/v1/namespaces/billing/tools/db.query"
__all__ = ["registry"]  # the live registry fixture of tests/api


async def seed_000(registry: Registry) -> None:
    """db.query v1 (seed 000's v3) and v2 (its v4), with the verified converter."""
    client = registry.client
    assert (await client.post(f"{TOOL}/versions", json={"definition": DB_QUERY_V3})).is_success
    body = {"definition": DB_QUERY_V4, "converters": [{"from": 1, "ops": V3_TO_V4_OPS}]}
    assert (await client.post(f"{TOOL}/versions", json=body)).status_code == 201


async def test_history_show_and_diff_read_what_the_registry_holds(
    registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed_000(registry)
    common = ("--url", registry.url, "--token", await registry.token("billing:read"))

    code, out, err = await run_cli(capsys, "history", "billing", "db.query", *common)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "billing/db.query: 2 versions"
    assert lines[1].split() == ["VERSION", "STATE", "DIGEST", "CREATED", "SUNSET", "ACCEPTED"]
    assert lines[2].split()[:2] == ["v1", "active"]
    assert lines[3].split()[:3] == ["v2", "active", "(current)"]
    code, out, _ = await run_cli(
        capsys, "history", "billing", "db.query", "--format", "json", *common
    )
    history = json.loads(out)["versions"]
    assert [v["version"] for v in history] == [1, 2]
    assert history[1]["digest"][:19] in lines[3]

    code, out, err = await run_cli(capsys, "show", "billing", "db.query", *common)
    assert (code, err) == (0, "")
    head, _, body = out.partition("{")
    assert head.splitlines()[0] == "billing/db.query v2 (active, current)"
    assert f"digest:   {history[1]['digest']}" in head
    assert json.loads("{" + body) == DB_QUERY_V4
    code, out, _ = await run_cli(
        capsys, "show", "billing", "db.query", "v1", "--format", "json", *common
    )
    assert (code, json.loads(out)["definition"]) == (0, DB_QUERY_V3)

    code, out, err = await run_cli(capsys, "diff", "billing", "db.query", "1", "2", *common)
    assert code == 1, err
    assert out.splitlines()[0] == "billing/db.query v1 -> v2"
    assert "property-renamed" in out and out.rstrip().splitlines()[-1].startswith("breaking:")
    code, out, _ = await run_cli(
        capsys, "diff", "billing", "db.query", "v1", "v2", "--format", "json", *common
    )
    answer = json.loads(out)
    assert (code, answer["version"], answer["against"]) == (1, 2, 1)
    assert answer["report"]["severity"] == "breaking"
    # the same pair read backwards: only what v1 lacks, additive or worse, but a report
    code, out, _ = await run_cli(capsys, "diff", "billing", "db.query", "2", "2", *common)
    assert (code, out.splitlines()[-1]) == (0, "identical: no changes")


async def test_lifecycle_verbs_change_the_registry(
    registry: Registry, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    await seed_000(registry)
    common = ("--url", registry.url, "--token", ADMIN_TOKEN)

    code, out, err = await run_cli(
        capsys, "deprecate", "billing", "db.query", "1", "--sunset", "2030-01-01T00:00:00Z", *common
    )
    assert (code, err) == (0, "")
    assert out == "billing/db.query v1: deprecated, sunset 2030-01-01T00:00:00Z\n"
    state = (await registry.client.get(f"{TOOL}/versions/1")).json()
    assert (state["state"], state["sunset"][:10]) == ("deprecated", "2030-01-01")

    code, out, err = await run_cli(
        capsys, "alias", "billing", "db_query_v1", "db.query", "--version", "v1", *common
    )
    assert (code, err) == (0, "")
    assert out == "billing/db_query_v1: created, resolves to db.query speaking db.query v1\n"
    code, out, _ = await run_cli(
        capsys, "alias", "billing", "db_query_v1", "db.query", "--version", "1", *common
    )
    assert out.startswith("billing/db_query_v1: unchanged")

    ops = tmp_path / "ops.json"
    ops.write_text(json.dumps({"ops": V3_TO_V4_OPS}))
    code, out, err = await run_cli(
        capsys, "converter", "billing", "db.query", "--from", "1", "--to", "2", "--ops", str(ops),
        *common,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out == (
        "billing/db.query: converter v1 -> v2 already registered (3 operations, verified)\n"
    )
    ops.write_text(json.dumps([{"op": "drop", "path": "/timeout_ms"}]))
    code, out, err = await run_cli(
        capsys, "converter", "billing", "db.query", "--from", "1", "--to", "2", "--ops", str(ops),
        *common,
    )  # fmt: skip
    assert (code, out) == (1, "")
    assert_one_line_error(err, "converter refused: HTTP 422")

    code, out, err = await run_cli(
        capsys, "retire", "billing", "db.query", "1", "--format", "json", *common
    )
    assert (code, err) == (0, "")
    assert (json.loads(out)["version"], json.loads(out)["state"]) == (1, "retired")
    code, out, err = await run_cli(capsys, "history", "billing", "db.query", *common)
    assert out.splitlines()[2].split()[:2] == ["v1", "retired"]


async def test_errors_are_one_line(registry: Registry, capsys: pytest.CaptureFixture[str]) -> None:
    await seed_000(registry)
    common = ("--url", registry.url, "--token", ADMIN_TOKEN)
    code, out, err = await run_cli(capsys, "show", "billing", "db.query", "9", *common)
    assert (code, out) == (2, "")
    assert_one_line_error(err, "HTTP 404", "version 9 of billing/db.query does not exist")
    code, out, err = await run_cli(capsys, "history", "billing", "nope", *common)
    assert (code, out) == (2, "")
    assert_one_line_error(err, "HTTP 404", "billing/nope does not exist")
    reader = await registry.token("billing:read")
    code, out, err = await run_cli(
        capsys, "deprecate", "billing", "db.query", "1", "--url", registry.url, "--token", reader
    )
    assert (code, out) == (2, "")
    assert_one_line_error(err, "HTTP 403", "billing:publish")


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        (("diff", "billing", "db.query", "x", "2", "--url", "http://h"), ("OLD 'x'",)),
        (("show", "billing", "db.query", "0", "--url", "http://h"), ("VERSION '0'",)),
        (("history", "billing", "db.query"), ("no registry URL",)),
        (("alias", "billing", "old", "new", "--version", "v", "--url", "http://h"), ("'v'",)),
        (
            ("converter", "billing", "t", "--from", "1", "--to", "2", "--ops", "/nonexistent"),
            ("/nonexistent",),
        ),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], parts: tuple[str, ...]
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert_one_line_error(err, *parts)


def test_diff_takes_two_or_four_operands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "diff", "a.json", "b.json", "c.json")
    assert (code, out) == (2, "")
    assert err.startswith("usage: registry diff [options] OLD NEW\n")
    assert "registry diff [options] NAMESPACE TOOL OLD NEW" in err
    assert "not 3 operands" in err


def test_a_sunset_without_a_time_zone_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "deprecate", "billing", "t", "1", "--sunset", "2030-01-01T00:00:00")
    assert code == 2
    assert "has no time zone" in err and "Traceback" not in err
