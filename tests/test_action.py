"""The GitHub Action (action.yml) and the pre-commit hooks (.pre-commit-hooks.yaml), run
as they are written: the action's shell steps in order, its install step included
(a fresh virtual environment gets the package from this checkout, as the action's
default does), then lint and check on a repository whose change breaks a caller.
Only `actions/setup-python` is not run: that Python is this one."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.seeds import DB_QUERY_V3, DB_QUERY_V4
from tests.sdk import V3_TO_V4_OPS
from tests.serving import env_with

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
HOOKS = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())


def _git(repo: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *argv],
        check=True,
        capture_output=True,
    )


def _write(repo: Path, tool: dict[str, Any], **decisions: Any) -> None:
    path = repo / "tools" / "db.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"namespace": "billing", "tool": tool, **decisions}, indent=2))


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment after the action's install step (its `bin`)."""
    venv = tmp_path_factory.mktemp("action") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (step,) = [s for s in ACTION["runs"]["steps"] if s.get("name") == "install the registry"]
    result = _run_step(step, {}, venv / "bin", ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    yield venv / "bin"


def _inputs(given: dict[str, str]) -> dict[str, str]:
    defaults = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    unknown = set(given) - set(defaults)
    assert not unknown, f"not inputs of action.yml: {unknown}"
    return {**defaults, **given}


def _expand(text: str, inputs: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if expression == "github.action_path":
            return str(ROOT)
        assert expression.startswith("inputs."), expression
        return inputs[expression.removeprefix("inputs.")]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _run_step(
    step: dict[str, Any], given: dict[str, str], bin_dir: Path, cwd: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    inputs = _inputs(given)
    env = env_with()
    env.update({k: _expand(str(v), inputs) for k, v in step.get("env", {}).items()})
    env.update(extra, PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", NO_COLOR="1")
    env.pop("PYTHONPATH", None)  # the installed package, not this checkout's
    assert step["shell"] == "bash"
    return subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _run_action(
    given: dict[str, str], bin_dir: Path, repo: Path, summary: Path
) -> list[subprocess.CompletedProcess[str]]:
    """The steps after the install, in order, as a composite action runs them: a step
    whose `if` is false is skipped, the first failing step ends the job."""
    results = []
    inputs = _inputs(given)
    for step in ACTION["runs"]["steps"]:
        if "run" not in step or step.get("name") == "install the registry":
            continue
        condition = step.get("if")
        if condition is not None:
            left, right = (part.strip() for part in condition.split("=="))
            if inputs[left.removeprefix("inputs.")] != right.strip("'"):
                continue
        result = _run_step(step, given, bin_dir, repo, GITHUB_STEP_SUMMARY=str(summary))
        results.append(result)
        if result.returncode != 0:
            break
    return results


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository whose `main` holds seed 000's v3 as the released db.query, and an
    mcp-registry.yaml that lints for correctness only."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, {**DB_QUERY_V3, "description": "Run a query."})
    # seed 000's properties carry no descriptions: the docs rules are left off
    (repo / "mcp-registry.yaml").write_text("lint:\n  use: [correctness]\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "release")
    return repo


def test_the_action_fails_a_break_against_the_base_branch_then_passes_its_fix(
    installed: Path, repository: Path, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    _write(repository, {**DB_QUERY_V4, "description": "Run a query."})
    lint, check = _run_action({"against": "main"}, installed, repository, summary)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert check.returncode == 1, check.stdout + check.stderr
    assert "::error file=tools/db.json,line=" in check.stdout
    assert "property-renamed" in check.stdout and "Traceback" not in check.stderr
    text = summary.read_text()
    assert "property-renamed" in text and "|" in text  # the markdown report

    _write(
        repository,
        {**DB_QUERY_V4, "description": "Run a query."},
        converters=[{"from": 1, "ops": V3_TO_V4_OPS}],
    )
    lint, check = _run_action({"against": "main"}, installed, repository, summary)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_action_lints_first_and_stops_on_a_finding(
    installed: Path, repository: Path, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    tool = {**DB_QUERY_V3, "description": "Run a query."}
    tool["inputSchema"] = {**tool["inputSchema"], "required": ["query", "limit"]}
    _write(repository, tool)
    (lint,) = _run_action({"against": "main"}, installed, repository, summary)
    assert lint.returncode == 1
    assert "title=required-undeclared::/tool/inputSchema/required/1" in lint.stdout
    assert "### registry lint: 1 finding in 1 tool" in summary.read_text()
    results = _run_action({"against": "main", "lint": "false"}, installed, repository, summary)
    assert len(results) == 1  # only the check ran


@pytest.mark.parametrize("hook_id", ["registry-check-git", "registry-lint"])
def test_the_offline_pre_commit_hooks_run_as_written(
    hook_id: str, installed: Path, repository: Path
) -> None:
    hook = next(h for h in HOOKS if h["id"] == hook_id)
    assert (hook["language"], hook["pass_filenames"]) == ("python", False)
    command = [*shlex.split(hook["entry"]), *hook["args"]]
    env = env_with()
    env["PATH"] = f"{installed}{os.pathsep}{env['PATH']}"
    env.pop("PYTHONPATH", None)

    def hook_run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=repository, env=env, capture_output=True, text=True, check=False
        )

    passed = hook_run()
    assert passed.returncode == 0, passed.stdout + passed.stderr
    broken = {**DB_QUERY_V4, "description": "Run a query."}
    broken["inputSchema"] = {**broken["inputSchema"], "required": ["query", "limit"]}
    _write(repository, broken)
    failed = hook_run()
    assert failed.returncode == 1, failed.stdout + failed.stderr
    expected = "check failed" if hook_id == "registry-check-git" else "required-undeclared"
    assert expected in failed.stdout
