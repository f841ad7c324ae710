"""docs/operations.md runs as written, against two live `registry serve`.

Every ```console transcript of the guide runs in order in one shell
(tests/readme_transcripts.py, as the README's do), in a
copy of `examples/`, with the virtual environment's `bin` first on PATH. The
source serves on the embedded PostgreSQL under `.registry` of that directory
(the guide's `http://127.0.0.1:8080`), the target under `target`
(`http://127.0.0.1:8081`); the guide starts the restored registry itself (on
8082). The only change to the text: those addresses become ports this test got.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port
from tests.readme_transcripts import parse, run
from tests.serving import env_with

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operations.md"
TOKEN = "change-me"


def test_the_guide_has_a_transcript_of_every_part() -> None:
    commands = " ".join(c.text for c in parse(GUIDE.read_text(encoding="utf-8")))
    for step in (
        "registry export",
        "registry import",
        "registry mode --set read-only",
        "registry mode --set import",
        "pg_dump",
        "pg_restore",
        "registry doctor",
    ):
        assert step in commands, step


@pytest.mark.timeout(600)
def test_the_guide_runs_as_written(spawn: Any, tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    shutil.copytree(ROOT / "examples", workdir / "examples")
    source = spawn("--data-dir", str(workdir / ".registry"), REGISTRY_BOOTSTRAP_TOKEN=TOKEN)
    target = spawn("--data-dir", str(workdir / "target"), REGISTRY_BOOTSTRAP_TOKEN=TOKEN)
    restored = free_port()
    addresses = {
        "127.0.0.1:8080": source.url.removeprefix("http://"),
        "127.0.0.1:8081": target.url.removeprefix("http://"),
        "127.0.0.1:8082": f"127.0.0.1:{restored}",
        "--port 8082": f"--port {restored}",
    }
    commands = []
    for command in parse(GUIDE.read_text(encoding="utf-8")):
        text = command.text
        for old, new in addresses.items():
            text = text.replace(old, new)
        commands.append(type(command)(text, command.expected, command.line))
    env = env_with(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        HOME=str(tmp_path),
        NO_COLOR="1",
        REGISTRY_BOOTSTRAP_TOKEN=TOKEN,
    )
    try:
        mismatches = run(commands, workdir, env, timeout=540)
    finally:
        _stop_what_the_guide_started(restored)
    assert not mismatches, "\n".join(
        str(m).replace("README", "docs/operations.md") for m in mismatches
    )


def _stop_what_the_guide_started(port: int) -> None:
    """The guide stops the serve it starts; when a transcript failed before it did, stop
    it here (SIGTERM: it stops its embedded PostgreSQL too), found by the port it got."""
    import psutil

    for process in psutil.process_iter(["pid", "cmdline"]):
        command = process.info["cmdline"] or []
        if "serve" in command and f"--port {port}" in " ".join(command):
            process.terminate()
            try:
                process.wait(timeout=30)
            except psutil.TimeoutExpired:
                process.kill()
