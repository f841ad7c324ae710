"""mcp-registry.yaml read by `check`, `plan` and `apply`: DIR from `manifests`, and
`fail_on: [lint]` failing a pipeline on the configured lint rules (here offline,
against the last release in git)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.seeds import DB_QUERY_V3
from tests.test_check_against_git import git, write
from tests.test_cli_server import assert_one_line_error, run


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, {"tool": DB_QUERY_V3})
    (tmp_path / "mcp-registry.yaml").write_text(
        "manifests: [tools]\nfail_on: [breaking, lint]\nlint:\n  use: [correctness]\n"
    )
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "release")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_takes_its_folder_and_fails_on_lint_from_the_config(
    repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "check", "--against", "main")
    assert (code, err) == (0, ""), out
    assert "check passed" in out

    broken = json.loads(json.dumps(DB_QUERY_V3))
    broken["inputSchema"]["required"] = ["query", "limit"]  # a name no property declares
    write(repository, {"tool": broken})
    code, out, err = run(capsys, "check", "--against", "main")
    assert code == 1
    assert "required-undeclared: /tool/inputSchema/required/1" in out
    assert err == "registry: 1 lint finding (fail_on: lint)\n"
    code, out, err = run(capsys, "check", "--against", "main", "--format", "json")
    assert code == 1 and json.loads(out)["tools"]  # the document stays the plan's
    assert "required-undeclared" in err


def test_a_config_naming_several_folders_asks_for_dir(
    repository: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repository / "mcp-registry.yaml").write_text("manifests: [tools, more]\n")
    code, out, err = run(capsys, "check", "--against", "main")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "names 2 manifest folders: give DIR")
    (repository / "mcp-registry.yaml").write_text("fail_on: [lnt]\n")
    code, out, err = run(capsys, "plan", "tools")
    assert (code, out) == (2, "")
    assert_one_line_error(err, "unknown fail_on value 'lnt' (did you mean 'lint'?)")
