"""The session's leftover-process check (tests/processes.py) fails a session that
leaves a process running, names it, and kills it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.processes import MARK

ROOT = Path(__file__).resolve().parents[1]


def test_a_process_left_behind_fails_the_session_and_is_killed(tmp_path: Path) -> None:
    (tmp_path / "test_leak.py").write_text(
        "import subprocess, sys\n\n"
        "def test_leak():\n"
        "    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
    )
    env = {key: value for key, value in os.environ.items() if key != MARK}
    env["REGISTRY_TEST_LEFTOVER_GRACE"] = "0.5"
    inner = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.processes", "-p", "no:cacheprovider",
         "-q", "--rootdir", str(tmp_path), str(tmp_path / "test_leak.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert inner.returncode == 1, inner.stdout + inner.stderr
    found = re.search(r"the tests left process (\d+) running: .*time\.sleep\(120\)", inner.stdout)
    assert found, inner.stdout
    pid = int(found.group(1))
    for _ in range(50):
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"process {pid} is still running")
