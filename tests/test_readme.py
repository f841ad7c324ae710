"""The README's stories, run as written against a live `registry serve`.

Every ```console transcript of README.md runs in order in one shell
(tests/readme_transcripts.py), in a copy of `examples/`, with the virtual
environment's `bin` first on PATH (as `. .venv/bin/activate` leaves it), against
`registry serve` on the embedded PostgreSQL started here as the README starts it
(`REGISTRY_BOOTSTRAP_TOKEN=change-me`). The only change to the text: the
registry's address `http://127.0.0.1:8080` becomes the port this test got.
What each command prints must match what the README shows.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.readme_transcripts import parse, run_against

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
README_URL = "http://127.0.0.1:8080"
README_TOKEN = "change-me"


def test_the_readme_has_transcripts_of_every_story() -> None:
    commands = [c.text for c in parse(README.read_text(encoding="utf-8"))]
    story = [
        "registry namespace create billing",
        "publish-v3.json",
        "publish-v4.json",
        "suggested_ops",
        "registry sync billing",
        "examples/call_tool.py",
        "registry apply examples/manifests",
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
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copytree(ROOT / "examples", workdir / "examples")
    text = README.read_text(encoding="utf-8")
    mismatches = run_against(text, README_URL, served.url, workdir, tmp_path, timeout=840)
    assert not mismatches, "\n".join(str(m) for m in mismatches)
