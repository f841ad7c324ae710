"""The README's story and the guides that continue it, run as written against a live
`registry serve`.

Every ```console transcript of README.md, then of the guides in STORY, runs in
order in one shell (tests/readme_transcripts.py), starting at the repository's
root as the README says, with the virtual environment's `bin` first on PATH (as
`. .venv/bin/activate` leaves it), against `registry serve` on the embedded
PostgreSQL started here as the README starts it (`REGISTRY_BOOTSTRAP_TOKEN=change-me`).
The only changes to the text: the registry's address `http://127.0.0.1:8080`
becomes the port this test got, and the scratch folder `/tmp/registry-tour` one
of this test's. What each command prints must match what the page shows; and
the checkout is left as it was (no file written, `tests/test_docs.py` passes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.processes import MARK
from tests.readme_transcripts import parse, run
from tests.serving import env_with

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_URL = "http://127.0.0.1:8080"
README_TOKEN = "change-me"
SCRATCH = "/tmp/registry-tour"
# the pages whose transcripts continue the README's story, in the order they run
STORY = [README, ROOT / "docs" / "publishing.md", ROOT / "docs" / "pipelines.md"]


def _story() -> list[Any]:
    return [
        command
        for page in STORY
        for command in parse(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))
    ]


def _checkout_state() -> str:
    """What git sees of the checkout: changed and untracked files (not ignored ones)."""
    return subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_readme_has_transcripts_of_every_story() -> None:
    commands = [c.text for c in _story()]
    story = [
        "registry namespace create billing",
        "publish-v3.json",
        "publish-v4.json",
        "suggested_ops",
        "registry sync billing",
        "examples/call_tool.py",
        "registry apply --create-namespace search examples/manifests",
        "registry check tools",
        "registry apply tools",
    ]
    missing = [step for step in story if not any(step in command for command in commands)]
    assert not missing, f"README transcripts lack: {missing}"


@pytest.mark.timeout(900)
def test_the_readme_runs_as_written(spawn: Any, tmp_path: Path) -> None:
    served = spawn(
        "--data-dir",
        str(tmp_path / "registry-data"),
        ready=60.0,
        REGISTRY_BOOTSTRAP_TOKEN="change-me",
    )
    scratch = tmp_path / "tour"
    commands = [
        replace(c, text=c.text.replace(README_URL, served.url).replace(SCRATCH, str(scratch)))
        for c in _story()
    ]
    env = env_with(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        HOME=str(tmp_path),
        NO_COLOR="1",
    )
    before = _checkout_state()
    mismatches = run(commands, ROOT, env, timeout=840)
    assert not mismatches, "\n".join(str(m) for m in mismatches)
    assert (scratch / "examples").is_dir(), "the story did not work in its scratch folder"
    assert _checkout_state() == before, "the story wrote into the checkout"
    # and the checkout's own documentation tests still pass after it
    docs = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_docs.py"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != MARK},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert docs.returncode == 0, docs.stdout[-3000:]
