"""`registry check DIR --against REF`: the manifests of DIR against their own last
release in git, no registry: the same report and exit codes as against a registry."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS
from tests.test_cli_server import assert_one_line_error, run


def git(repo: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *argv],
        check=True,
        capture_output=True,
    )


def write(repo: Path, manifest: dict[str, Any], name: str = "db.json") -> None:
    path = repo / "tools" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"namespace": "billing", **manifest}, indent=2))


@pytest.fixture
def released(tmp_path: Path) -> Path:
    """A repository whose `main` holds seed 000's v3 as the released db.query."""
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, {"tool": DB_QUERY_V3})
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "release")
    return tmp_path


def check(capsys: pytest.CaptureFixture[str], repo: Path, *argv: str) -> tuple[int, str, str]:
    return run(capsys, "check", str(repo / "tools"), *argv)


def test_an_undecided_break_against_main_fails(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(released, {"tool": DB_QUERY_V4})
    code, out, err = check(capsys, released, "--against", "main")
    assert (code, err) == (1, "")
    assert "property-renamed" in out and "/inputSchema/properties/timeout_ms" in out
    code, out, _ = check(capsys, released, "--against", ".git#branch=main", "--format", "json")
    answer = json.loads(out)
    assert (code, answer["accepted"]) == (1, False)
    (plan,) = answer["tools"]
    assert (plan["action"], plan["version"]) == ("new-version", 2)
    assert [d["version"] for d in plan["decisions"]] == [1]


def test_a_break_with_the_converter_it_adds_passes(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(released, {"tool": DB_QUERY_V4, "converters": [{"from": 1, "ops": V3_TO_V4_OPS}]})
    code, out, err = check(capsys, released, "--against", "main", "--format", "json")
    assert (code, err) == (0, "")
    (plan,) = json.loads(out)["tools"]
    assert [(c["action"], c["version"]) for c in plan["lifecycle"]] == [("converter", 1)]
    # once released, the converter is history: the next change is read on its own
    git(released, "commit", "-qam", "v4")
    write(released, {"tool": DB_QUERY_V4, "converters": [{"from": 1, "ops": V3_TO_V4_OPS}]})
    code, out, _ = check(capsys, released, "--against", "HEAD", "--format", "json")
    (plan,) = json.loads(out)["tools"]
    assert (code, plan["action"], plan["lifecycle"]) == (0, "unchanged", [])


def test_a_break_accepted_on_purpose_passes_and_a_new_tool_is_created(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accept = [
        {"kind": kind, "path": f"/inputSchema/properties/{path}", "reason": "r"}
        for kind, path in (
            ("property-renamed", "timeout_ms"),
            ("enum-narrowed", "mode/enum"),
            ("default-removed", "timeout/default"),
        )
    ]
    write(released, {"tool": DB_QUERY_V4, "accept": accept})
    write(released, {"tool": {**DB_QUERY_V3, "name": "db.count"}}, "count.json")
    code, out, err = check(capsys, released, "--against", "main", "--format", "json")
    answer = json.loads(out)
    assert (code, err) == (0, ""), out
    actions = {plan["tool"]: plan["action"] for plan in answer["tools"]}
    assert actions == {"db.query": "new-version", "db.count": "create"}


def test_bad_revisions_and_folders_are_one_line(
    released: Path, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = check(capsys, released, "--against", "nope")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "--against nope: no such revision in")
    code, out, err = check(capsys, released, "--against", ".git#banch=main")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "write .git#branch=NAME")
    code, out, err = check(capsys, released, "--against", "main", "--against-file", "t.json")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "name one")
    elsewhere = tmp_path_factory.mktemp("plain")
    write(elsewhere, {"tool": DB_QUERY_V3})
    code, out, err = check(capsys, elsewhere, "--against", "main")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "is not in a git repository")


def test_a_folder_that_did_not_exist_at_the_revision_holds_only_new_tools(
    released: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (released / "more").mkdir()
    (released / "more" / "t.json").write_text(
        json.dumps({"namespace": "billing", "tool": {**DB_QUERY_V4, "name": "t"}})
    )
    code, out, err = run(capsys, "check", str(released / "more"), "--against", "main")
    assert (code, err) == (0, "")
    assert "create" in out
